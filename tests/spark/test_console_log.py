"""What Spark's own log (session.LOG4J2) lets through to a feed's console: errors an operator can
act on, never a task aborted under a query whose failure the console already says in one line."""

from __future__ import annotations

import pytest

from ..waiting import HANG_S
from .jobs import kill, launch

# Logged by a feed's driver JVM through its own log4j, as Spark's classes log.
SCRIPT = """
from spark_feeds.session import local_session
spark = local_session("console check", "local[1]")
jvm = spark.sparkContext._jvm
utils = jvm.org.apache.logging.log4j.LogManager.getLogger("org.apache.spark.util.Utils")
utils.error("Aborting task", jvm.java.net.SocketException("Connection reset"))
utils.error("Uncaught exception in thread check-thread")
spark.stop()
"""


@pytest.mark.slow
def test_a_task_aborted_when_its_python_side_stopped_reading_prints_no_java_stack_trace() -> None:
    """Ctrl-C in ./scripts/run stops the server and the feed at once: the sink raises on the
    closed socket, the task serving its rows logs "Aborting task" and a Java stack trace. The
    query's failure is said in one line (console.py); the trace is noise, and the test of the
    quiet Ctrl-C saw it once in a while. Other errors of the same logger still show."""
    job = launch("-c", SCRIPT)
    try:
        err = job.communicate(timeout=HANG_S)[1]
    finally:
        kill(job)
    assert job.returncode == 0, err
    assert "Uncaught exception in thread check-thread" in err, err
    assert "Aborting task" not in err and "SocketException" not in err, err
