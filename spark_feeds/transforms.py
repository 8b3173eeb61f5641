"""Pure DataFrame transforms of the demo pipelines (no sources, no sinks: testable on static data).

``ticks_from_rate`` turns the ``rate`` source (timestamp, value) into simulated trades,
``positions_from_ticks`` aggregates them per trader and time window into a PnL, and
``orders_from_rate`` walks a fixed book of orders through their lifecycle (new, partially
filled, filled or cancelled) so that a view of open orders sees records leave it.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

TRADERS = ["ann", "ben", "cho", "dev", "eli"]
SYMBOLS = ["AAPL", "MSFT", "NVDA", "AMZN", "TSLA", "IBM"]
STATUSES = ["new", "partial", "filled", "cancelled"]
BOOK = 200  # orders in the book; each comes back every BOOK ticks in its next state


def _pick(names: list[str], index: Any) -> Any:
    return F.element_at(F.array(*[F.lit(name) for name in names]), (index % len(names) + 1).cast("int"))


def ticks_from_rate(rate: DataFrame) -> DataFrame:
    value = F.col("value")
    return rate.select(
        F.col("timestamp"),
        _pick(TRADERS, value).alias("trader"),
        _pick(SYMBOLS, value * 7).alias("sym"),
        F.when(value % 2 == 0, F.lit("B")).otherwise(F.lit("S")).alias("side"),
        ((value * 7919) % 500 + 1).cast("long").alias("qty"),
        (F.lit(100.0) + ((value * 104729) % 2000) / 100.0).alias("px"),
    )


def positions_from_ticks(ticks: DataFrame, window: str = "10 seconds") -> DataFrame:
    signed = F.when(F.col("side") == "B", F.col("qty")).otherwise(-F.col("qty"))
    pnl = signed * (F.col("px") - F.lit(110.0))
    return (
        ticks.withWatermark("timestamp", "30 seconds")
        .groupBy(F.window("timestamp", window), F.col("trader"))
        .agg(
            F.round(F.sum(pnl), 2).alias("pnl"),
            F.sum(signed).alias("position"),
            F.count(F.lit(1)).alias("trades"),
        )
        .select(
            "trader",
            F.col("window.start").cast("string").alias("window_start"),
            "pnl",
            "position",
            "trades",
        )
    )


def orders_from_rate(rate: DataFrame) -> DataFrame:
    value = F.col("value")
    stage = F.floor(value / BOOK) % len(STATUSES)
    qty = ((value % BOOK) * 37 % 900 + 100).cast("long")
    return rate.select(
        (value % BOOK).cast("long").alias("order"),
        _pick(SYMBOLS, value % BOOK).alias("sym"),
        _pick(TRADERS, value % BOOK * 3).alias("trader"),
        qty.alias("qty"),
        F.when(stage == 0, F.lit(0))
        .when(stage == 1, (qty / 2).cast("long"))
        .when(stage == 2, qty)
        .otherwise((qty / 3).cast("long"))
        .alias("filled"),
        (F.lit(100.0) + (value % BOOK) / 4.0).alias("px"),
        _pick(STATUSES, stage).alias("status"),
        F.col("timestamp").cast("string").alias("updated"),
    )


def stamped(frame: DataFrame, column: str = "trigger_ts") -> DataFrame:
    """``frame`` with ``column`` holding its micro-batch's trigger time. In a streaming query
    ``current_timestamp()`` is the batch's timestamp, fixed when the trigger fires, the same for
    every row of the batch; so, with the server's ``ts`` on each message and the browser's clock,
    a dashboard can tell how long a batch took from Spark to the screen. Apply it to the
    streaming DataFrame (inside ``foreachBatch`` it would be the time the batch is written)."""
    return frame.withColumn(column, F.current_timestamp())
