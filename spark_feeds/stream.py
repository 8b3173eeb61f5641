"""One call from a streaming DataFrame to a live topic: ``publish_stream``.

Exactly once rests on one directory. Spark keeps in it which micro-batches it has committed, and
the sink keeps in it the client name its sequence numbers belong to; the same directory on every
run means a batch that runs again is a duplicate to the server. Given once, the two cannot
disagree:

    query = publish_stream(frame, url="ws://127.0.0.1:8000/ws", topic="orders",
                           checkpoint="./checkpoints/orders")
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .session import SPARK_DEFAULT_SHUFFLE_PARTITIONS, apply_trigger, shuffle_partitions
from .sink import ProtocolSink, client_name_for

log = logging.getLogger("spark_feeds")
_sinks: dict[str, ProtocolSink] = {}  # the sink of each running query, by query id


def publish_stream(
    frame: Any,
    *,
    url: str,
    topic: str,
    checkpoint: str | Path,
    mode: str = "publish",
    output_mode: str = "append",
    trigger: str | float | None = None,
    transactions: str = "off",
    key_columns: Sequence[str] = (),
    query_name: str | None = None,
    client_name: str | None = None,
    **sink_options: Any,
) -> Any:
    """Start a query that publishes every row of the streaming DataFrame ``frame`` into ``topic``
    and return it (a ``StreamingQuery``).

    ``checkpoint``: the query's checkpoint directory; the sink's client name is kept in it too.
    ``mode``: ``publish``, ``delta_publish`` or ``delete`` (by ``key_columns``). ``output_mode``:
    Spark's (``update`` for an aggregation without a window). ``trigger``: ``available-now``,
    ``once`` or seconds between micro-batches (default: Spark's, the next batch as soon as the
    last is done). ``transactions``: ``off``, ``batch`` or ``partition``. ``client_name``
    overrides the one kept in the checkpoint (a replayed batch is a duplicate only under the
    same name). ``sink_options``: the rest of ``ProtocolSink``'s fields (``retry_s``,
    ``timeout_s``, ``frame_bytes``, ``user_id``, ``password``). The sink's connection is closed
    when the query ends.
    """
    _say_if_shuffles_are_many(frame)
    sink = ProtocolSink(
        url,
        topic,
        client_name or client_name_for(checkpoint, topic),
        mode=mode,
        key_columns=tuple(key_columns),
        transactions=transactions,
        **sink_options,
    )
    writer = (
        frame.writeStream.outputMode(output_mode)
        .foreachBatch(sink)
        .option("checkpointLocation", str(checkpoint))
    )
    if trigger is not None:
        writer = apply_trigger(writer, str(trigger))
    if query_name is not None:
        writer = writer.queryName(query_name)
    query = writer.start()
    _sinks[str(query.id)] = sink
    threading.Thread(target=_close_when_over, args=(query, sink), name=f"close {topic}", daemon=True).start()
    return query


def _say_if_shuffles_are_many(frame: Any) -> None:
    """One warning when a local session shuffles into Spark's default 200 partitions: an
    aggregation's micro-batch of a few thousand rows then runs 200 tasks, tens of seconds on a
    laptop (``session.local_session`` sets few; README, Your own job)."""
    session = frame.sparkSession
    master = session.sparkContext.master
    partitions = session.conf.get("spark.sql.shuffle.partitions")
    if master.startswith("local") and partitions == SPARK_DEFAULT_SHUFFLE_PARTITIONS:
        log.warning(
            "spark.sql.shuffle.partitions is %s (Spark's default) on %s: an aggregation or a join "
            "runs that many tasks a micro-batch; spark_feeds.session.local_session() sets %s "
            "(SPARK_SHUFFLE_PARTITIONS overrides it; a stateful query keeps the number its "
            "checkpoint was started with)",
            partitions,
            master,
            shuffle_partitions(master),
        )


def _close_when_over(query: Any, sink: ProtocolSink) -> None:
    """Wait for the query to end (stopped, failed or done), then close its sink's connection.
    A thread blocked in one py4j call costs nothing; a StreamingQueryListener would do the same
    but is called in Python for every progress event of every query (a fifth of a core in the
    demo)."""
    try:
        query.awaitTermination()
    except Exception:  # failed, or Spark stopped under it: over either way
        pass
    finally:
        _sinks.pop(str(query.id), None)
        sink.close()


def stop_queries(queries: Iterable[Any]) -> None:
    """Stop ``queries`` promptly: first their sinks (a micro-batch waiting for an unreachable server
    gives up at once, instead of holding ``query.stop()`` for its retry time), then the queries. A
    batch cut short is not committed: it runs again on the next start, a duplicate to the server."""
    queries = list(queries)
    for query in queries:
        sink = _sinks.pop(str(query.id), None)
        if sink is not None:
            sink.close()
    for query in queries:
        try:
            query.stop()
        except Exception as error:  # it failed as it was being stopped: stopped all the same
            log.debug("stopping %s: %s", query.name, error)
