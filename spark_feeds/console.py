"""What a feed's console shows: its own one-line summaries, Spark's errors, and nothing else: no
progress bars and none of Spark's start-up chatter (``session.local_session``), and no Python or
Java stack trace when Ctrl-C (or SIGTERM) stops it. The queries stop between or during
micro-batches (one that did not finish runs again on the next start, and is a duplicate to the
server), Spark stops, and the process exits 0."""

from __future__ import annotations

import logging
import math
import re
import signal
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from types import FrameType
from typing import Any

from .stream import stop_queries

log = logging.getLogger("spark_feeds")


def log_lines() -> None:
    """The feed's own log: one line per event, with the time."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # py4j logs every callback connection it opens and closes at INFO, and a ``foreachBatch`` that
    # raised (the sink refused, or out of retries) at ERROR with its stack trace: the query fails
    # with that error, and ``run_until_stopped`` says it in one line.
    logging.getLogger("py4j").setLevel(logging.CRITICAL)


class Stop:
    """SIGINT and SIGTERM set ``requested`` instead of raising in whatever the main thread was
    doing (PySpark's own SIGINT handler cancels every job and raises KeyboardInterrupt inside a
    py4j call: a Java and a Python stack trace). Once stopping, a further SIGTERM is ignored
    (./scripts/run sends one after the terminal's SIGINT); a second Ctrl-C exits at once."""

    def __init__(self) -> None:
        self.requested = threading.Event()

    def install(self) -> None:
        for number in (signal.SIGINT, signal.SIGTERM):
            signal.signal(number, self._handle)

    def _handle(self, number: int, frame: FrameType | None) -> None:
        if self.requested.is_set() and number == signal.SIGINT:
            raise SystemExit(128 + number)
        self.requested.set()


def run_until_stopped(
    spark: Any,
    queries: Iterable[Any],
    stop: Stop,
    every_s: float = math.inf,
    summary: Callable[[], str] | None = None,
    heartbeat: Path | None = None,
) -> int:
    """Wait for a signal or for a query to end, logging ``summary()`` every ``every_s`` and
    touching ``heartbeat`` (a file a health check can look at) every second while every query
    runs; then stop the queries and Spark. Returns the exit status: 0 when stopped by a signal or
    done, 1 when a query failed (its error in one line)."""
    queries = list(queries)
    status = 0
    next_summary = time.monotonic() + every_s
    quiet_query_errors(spark)
    while not stop.requested.is_set():
        if heartbeat is not None and all(query.isActive for query in queries):
            heartbeat.touch()
        if ended(spark):
            failed = [q for q in queries if not q.isActive and q.exception() is not None]
            if failed:
                # One line, however many had failed by now: queries of one feed mostly fail for
                # one reason (a wrong password refuses every sink's logon).
                log.error(
                    "%s",
                    "; ".join(f"query {q.name} failed: {reason(str(q.exception()))}" for q in failed),
                )
            status = 1 if failed else 0
            break
        if summary is not None and time.monotonic() >= next_summary:
            next_summary += every_s
            log.info("%s", summary())
    # From here on, what Spark says is about being stopped: a micro-batch cut short is an error
    # to it, but it is not lost (it runs again on the next start, and is a duplicate then).
    mute(spark)
    stop_queries(queries)
    spark.stop()
    return status


def ended(spark: Any) -> bool:
    """Whether a query has ended, waiting up to a second (so that a signal is seen within one).
    PySpark raises a failed query's error here instead of answering: it has ended too."""
    from pyspark.errors import StreamingQueryException  # noqa: PLC0415 - Spark only when it runs

    try:
        return bool(spark.streams.awaitAnyTermination(1))
    except StreamingQueryException:
        return True


# The line of a Python stack trace that names its exception: ``spark_feeds.link.FeedError: ...``.
EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?(\w+(?:Error|Exception)): (.+)$")


def reason(error: str) -> str:
    """A failed query's error in one line: the exception the ``foreachBatch`` raised, when Spark's
    error carries its Python stack trace (its own first line is Spark's wrapper, ending in
    "Traceback"); the error's first line otherwise. A ``FeedError`` is the sink's own words."""
    lines = error.strip().splitlines()
    for line in lines:
        match = EXCEPTION_LINE.match(line)
        if match and "Traceback" not in line:
            kind, text = match.groups()
            return text if kind == "FeedError" else f"{kind}: {text}"
    return lines[0] if lines else "no reason given"


def quiet_query_errors(spark: Any) -> None:
    """Spark's log of a query that failed (``ERROR MicroBatchExecution: Query ... terminated with
    error`` and a Java stack trace around the Python one) off: ``run_until_stopped`` says why in
    one line instead."""
    log4j = spark.sparkContext._jvm.org.apache.logging.log4j
    for name in ("org.apache.spark.sql.execution.streaming.runtime.MicroBatchExecution",):
        log4j.core.config.Configurator.setLevel(name, log4j.Level.OFF)


def mute(spark: Any) -> None:
    """Every logger of the driver's JVM off (``setLogLevel`` sets only the root, and the loggers
    given a level of their own in LOG4J2 would still speak), and py4j's, which logs the error of a
    ``foreachBatch`` call whose job the stop cancelled, with both stack traces."""
    logging.getLogger("py4j").setLevel(logging.CRITICAL + 1)
    jvm = spark.sparkContext._jvm  # the py4j view of the JVM: log4j has no Python face
    log4j = jvm.org.apache.logging.log4j
    log4j.core.config.Configurator.setAllLevels("", log4j.Level.OFF)
