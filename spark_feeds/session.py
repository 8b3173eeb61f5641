"""What the job entry points share: a local SparkSession and the --trigger option."""

from __future__ import annotations

import os
from typing import Any

from pyspark.sql import SparkSession


def local_session(app: str, master: str | None = None) -> SparkSession:
    """A SparkSession for a feed, quiet, UI off. Under spark-submit the master is the one it was
    given; otherwise ``master``, ``SPARK_MASTER`` or ``local[*]``."""
    builder = SparkSession.builder.appName(app)
    if "PYSPARK_GATEWAY_PORT" not in os.environ:  # not launched by spark-submit
        builder = builder.master(master or os.environ.get("SPARK_MASTER", "local[*]"))
    session = (
        builder.config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", os.environ.get("SPARK_SHUFFLE_PARTITIONS", "2"))
        .config("spark.sql.streaming.schemaInference", "true")
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
