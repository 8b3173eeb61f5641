"""PySpark Structured Streaming feeds into the push server (PROTOCOL section 9).

``transforms``: pure DataFrame transforms. ``sink``: the one foreachBatch writer that speaks the
protocol, with an exactly-once effect. ``files`` and ``demo``: thin job entry points.
"""
