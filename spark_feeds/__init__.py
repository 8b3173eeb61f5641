"""PySpark Structured Streaming feeds into the push server (docs/protocol.md, Spark feeds).

``transforms``: pure DataFrame transforms. ``sink``: the one foreachBatch writer that speaks the
protocol, with an exactly-once effect. ``files`` and ``demo``: thin job entry points.
"""
