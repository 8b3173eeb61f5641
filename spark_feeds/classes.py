"""The Spark driver's class archive: the JVM's classes of a feed's first seconds, made once.

A local feed's JVM loads and verifies some 10,000 classes from Spark's jars before its first
micro-batch: about 9 CPU-s on this kind of machine. From an archive of them (the JVM's class data
sharing, made by one short job at set-up: ``python -m spark_feeds.classes``, which
scripts/bootstrap runs) it maps them instead: about 5 CPU-s, and half the wait.

The archive lives in the Python environment (``sys.prefix``), beside the jars it was made from.
Without it, or when it no longer matches them (PySpark upgraded, another JVM), the JVM loads the
classes as before and says nothing: its class-sharing messages are turned off with it.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

ARCHIVE = Path(sys.prefix) / "spark-classes.jsa"
# Silent either way: a missing or mismatched archive is not a fault of the feed's.
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


def java_options() -> str:
    """The driver JVM's options that map the archive, or nothing where its path has a space (Spark
    splits these options on white space)."""
    path = str(ARCHIVE)
    if any(char.isspace() for char in path):
        return ""
    return f"-XX:SharedArchiveFile={path} {QUIET}"


def build(archive: Path = ARCHIVE) -> None:
    """Make the archive by running what a feed runs in its first seconds (a batch aggregation, a
    streaming query through ``foreachBatch``), then stopping the JVM, which writes the classes it
    loaded. Written beside, then renamed: a JVM starting meanwhile finds none or all of it."""
    from .session import local_session  # noqa: PLC0415 (it imports this module; pyspark is the spark extra's)

    partial = archive.with_name(f"{archive.name}.{os.getpid()}.tmp")
    spark = local_session(
        "sowpush class archive", "local[2]", java_options=f"-XX:ArchiveClassesAtExit={partial} {QUIET}"
    )
    spark.sparkContext.setLogLevel("ERROR")
    gateway = spark.sparkContext._gateway
    assert gateway is not None  # this process launched the JVM: it is the gateway's
    with tempfile.TemporaryDirectory() as work:
        spark.range(100).selectExpr("id % 3 AS k", "id AS v").groupBy("k").count().collect()
        query = (
            spark.readStream.format("rate")
            .option("rowsPerSecond", 10)
            .load()
            .selectExpr("value % 3 AS k", "to_json(struct(*)) AS row")
            .writeStream.foreachBatch(_read_batch)
            .option("checkpointLocation", work)
            .start()
        )
        query.processAllAvailable()
        query.stop()
    spark.stop()
    # The JVM exits when its standard input closes (PythonGatewayServer), and writes the archive
    # as it exits: waited for, so that the rename below moves a whole file.
    gateway.shutdown()
    gateway.proc.stdin.close()
    gateway.proc.wait(timeout=120)
    if not partial.exists():
        raise RuntimeError("the JVM wrote no class archive")
    partial.replace(archive)


def _read_batch(frame: Any, _batch: int) -> None:
    """What the sink does with a micro-batch first: read its rows as JSON."""
    frame.toJSON().collect()


def main() -> int:
    try:
        build()
    except Exception as error:  # the archive only saves time: say why, go on
        print(f"spark_feeds.classes: no class archive ({error}); feeds start without it", file=sys.stderr)
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
