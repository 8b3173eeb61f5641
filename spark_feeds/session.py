"""What the job entry points share: a local SparkSession, quiet (no progress bars, Spark's driver
logging errors and the warnings that matter) and shuffling into few partitions, and the --trigger
option."""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from . import classes

# Spark's log4j2 configuration for a feed's driver: errors, and warnings from everything but what
# warns on every healthy run (a trigger that took longer than its interval on a busy machine,
# AQE off in streaming, no native Hadoop library, a host name that resolves to loopback). Nor
# "Aborting task" with a Java stack trace: a task whose Python side stopped reading (the sink
# raised, say because Ctrl-C stopped the server too) fails its query, which the console says in
# one line (console.py).
LOG4J2 = """\
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = stderr
appender.stderr.type = Console
appender.stderr.name = stderr
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.streaming.name = org.apache.spark.sql.execution.streaming
logger.streaming.level = error
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = error
logger.utils.name = org.apache.spark.util.Utils
logger.utils.level = error
logger.utils.filter.aborting.type = RegexFilter
logger.utils.filter.aborting.regex = (?s)Aborting task.*
logger.utils.filter.aborting.onMatch = DENY
logger.utils.filter.aborting.onMismatch = NEUTRAL
"""


def log4j2_file() -> Path:
    """``LOG4J2`` in a file the driver's JVM can be pointed at (written once per content)."""
    digest = hashlib.sha256(LOG4J2.encode()).hexdigest()[:12]
    path = Path(tempfile.gettempdir()) / f"sowpush-feed-log4j2-{digest}.properties"
    if not path.exists():
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(LOG4J2)
        partial.replace(path)
    return path


# Spark's own default: right for a cluster's terabytes, two hundred tasks a micro-batch for a feed's
# few thousand rows on a laptop (a groupBy took 27 to 42 s a micro-batch, 1.1 s with 2).
SPARK_DEFAULT_SHUFFLE_PARTITIONS = "200"


def shuffle_partitions(master: str | None) -> str:
    """How many partitions an aggregation or a join of a feed shuffles into:
    ``SPARK_SHUFFLE_PARTITIONS`` if set; else, on a local master, one per core it runs on
    (``local[4]``: 4; ``local[*]``: every core); else 2 (a feed's micro-batch is small)."""
    if os.environ.get("SPARK_SHUFFLE_PARTITIONS"):
        return os.environ["SPARK_SHUFFLE_PARTITIONS"]
    threads = re.fullmatch(r"local\[(\d+|\*)(?:,\d+)?\]", master or "")
    if threads is not None:
        return str(os.cpu_count() or 2) if threads[1] == "*" else threads[1]
    return "1" if master == "local" else "2"


def local_session(app: str, master: str | None = None, java_options: str | None = None) -> SparkSession:
    """A SparkSession for a feed, quiet, UI off, shuffling into few partitions
    (``shuffle_partitions``). Under spark-submit the master is the one it was given; otherwise
    ``master``, ``SPARK_MASTER`` or ``local[*]``, with a driver that logs only what matters
    (LOG4J2) and maps its classes from the class archive when there is one (classes.py), or
    takes ``java_options`` instead (the archive's own build writes it). Every session of the
    project is this one: the feeds', the class archive's job and the tests'."""
    builder = SparkSession.builder.appName(app)
    chosen = None
    if "PYSPARK_GATEWAY_PORT" not in os.environ:  # not launched by spark-submit
        chosen = master or os.environ.get("SPARK_MASTER", "local[*]")
        builder = builder.master(chosen)
        driver = classes.java_options() if java_options is None else java_options
        builder = builder.config(
            "spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log4j2_file()} {driver}"
        )
    session = (
        builder.config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", shuffle_partitions(chosen))
        .config("spark.sql.streaming.schemaInference", "true")
        # Wide records make plans wider than 25 fields, which Spark warns about once otherwise.
        .config("spark.sql.debug.maxToStringFields", "200")
        # The driver's status store keeps the last 1,000 SQL executions, jobs and stages even with
        # the UI off, where nothing reads them: a feed runs one to three a micro-batch, and with
        # the demo's wide plans 1,000 of each held 53 MB, two fifths of its live heap. A hundred.
        .config("spark.sql.ui.retainedExecutions", "100")
        .config("spark.ui.retainedJobs", "100")
        .config("spark.ui.retainedStages", "100")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("WARN")
    return session


def apply_trigger(writer: Any, trigger: str) -> Any:
    """``available-now`` (everything there is, then stop), ``once``, or a number of seconds (the
    option is checked when it is parsed: ``checks.trigger``)."""
    if trigger == "available-now":
        return writer.trigger(availableNow=True)
    if trigger == "once":
        return writer.trigger(once=True)
    return writer.trigger(processingTime=f"{float(trigger)} seconds")
