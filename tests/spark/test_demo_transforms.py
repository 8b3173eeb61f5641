"""The demo's transforms on data we make (a real local Spark): positions that accumulate over every
trade, across micro-batches; orders that move one at a time, each along its own lifecycle, in
records that deltas make much smaller."""

from __future__ import annotations

import itertools
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jsonpatch
import orjson
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_feeds.market import TRADERS
from spark_feeds.transforms import CYCLE, orders_from_rate, positions_from_ticks, ticks_from_rate

START = datetime(2027, 1, 15, 8, 0, tzinfo=UTC)


def rate(spark: SparkSession, count: int, per_second: int, offset: int = 0) -> DataFrame:
    """What the ``rate`` source gives: ``count`` rows from value ``offset``, ``per_second`` a second."""
    return spark.range(offset, offset + count).select(
        (F.lit(START.timestamp()) + F.col("id") / per_second).cast("timestamp").alias("timestamp"),
        F.col("id").alias("value"),
    )


def as_records(frame: DataFrame) -> list[dict[str, Any]]:
    """The rows as the sink publishes them: Spark's JSON, in order."""
    return [orjson.loads(row[0]) for row in frame.select(F.to_json(F.struct("*"))).collect()]


@pytest.mark.slow
def test_positions_accumulate_over_every_micro_batch(spark: SparkSession, tmp_path: Path) -> None:
    """Three micro-batches a minute apart (far beyond any window): each trader's record holds the
    totals of every trade so far, and the last equals the aggregation of all the trades at once."""
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    for batch in range(3):
        rows = [
            {"timestamp": (START + timedelta(minutes=batch, seconds=n / 100)).isoformat(), "value": value}
            for n, value in enumerate(range(batch * 400, batch * 400 + 400))
        ]
        (incoming / f"{batch}.json").write_text("\n".join(orjson.dumps(r).decode() for r in rows))
    source = spark.readStream.schema("timestamp TIMESTAMP, value LONG").option("maxFilesPerTrigger", 1)
    outputs: list[dict[str, dict[str, Any]]] = []
    query = (
        positions_from_ticks(ticks_from_rate(source.json(str(incoming))))
        .writeStream.outputMode("update")
        .foreachBatch(lambda batch, _: outputs.append({r["trader"]: r for r in as_records(batch)}))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(180)
    assert len(outputs) == 3, "one micro-batch per file"
    assert [sum(r["trades"] for r in out.values()) for out in outputs] == [400, 800, 1200]
    for trader in TRADERS:
        counts = [out[trader]["trades"] for out in outputs]
        assert counts == sorted(counts) and counts[0] < counts[-1], f"{trader}'s trades only grow"
    everything = spark.read.schema("timestamp TIMESTAMP, value LONG").json(str(incoming))
    expected = {r["trader"]: r for r in as_records(positions_from_ticks(ticks_from_rate(everything)))}
    # Sums of floating-point numbers taken in another order: equal to the cent.
    assert outputs[-1] == {trader: pytest.approx(record, abs=0.011) for trader, record in expected.items()}


def test_a_position_is_its_trades_marked_to_the_mid(spark: SparkSession) -> None:
    ticks = as_records(ticks_from_rate(rate(spark, 3000, 500)))
    computed = as_records(positions_from_ticks(ticks_from_rate(rate(spark, 3000, 500))))
    positions = {r["trader"]: r for r in computed}
    assert set(positions) == set(TRADERS)
    for trader, position in positions.items():
        mine = [t for t in ticks if t["trader"] == trader]
        bought = sum(t["qty"] for t in mine if t["side"] == "B")
        sold = sum(t["qty"] for t in mine if t["side"] == "S")
        cash = sum(t["qty"] * t["px"] * (1 if t["side"] == "S" else -1) for t in mine)
        assert (position["bought"], position["sold"], position["trades"]) == (bought, sold, len(mine))
        assert position["position"] == bought - sold
        assert position["mark"] == pytest.approx(mine[-1]["mid"], abs=1e-4), "marked to the latest mid"
        # Realised plus unrealised is the cash plus what the position is worth at the mark.
        assert position["pnl"] == pytest.approx(cash + (bought - sold) * position["mark"], abs=0.05)
        parts = position["realised_pnl"] + position["unrealised_pnl"]
        assert parts == pytest.approx(position["pnl"], abs=0.02)
        assert {"desk", "book", "sym", "name", "isin", "avg_px", "exposure", "updated"} <= set(position)


def test_a_micro_batch_moves_only_the_orders_it_visits_and_each_at_its_own_time(spark: SparkSession) -> None:
    book, per_batch = 400, 100
    records = as_records(orders_from_rate(rate(spark, book * 12, per_batch), book))
    first_round = [r["order"] for r in records[:book]]
    assert sorted(first_round) == list(range(book)), "a round visits every order once"
    assert [r["order"] for r in records[book : 2 * book]] != first_round, "in an order of its own"
    for start in range(0, len(records), per_batch):
        batch = records[start : start + per_batch]
        assert len({r["order"] for r in batch}) > per_batch * 0.9, "a batch changes only some orders"
        assert len({r["status"] for r in batch}) >= 3, "and they are at different steps"
    # How many rounds pass between an order's visits varies: it is visited at random moments.
    gaps = defaultdict(list)
    for index, record in enumerate(records):
        gaps[record["order"]].append(index)
    spacing = {b - a for visits in gaps.values() for a, b in itertools.pairwise(visits)}
    assert min(spacing) < book / 4 and max(spacing) > book * 1.75


def test_every_visit_moves_an_order_one_step_along_its_life(spark: SparkSession) -> None:
    book = 50
    records = as_records(orders_from_rate(rate(spark, book * CYCLE * 3, 100), book))
    history: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        history[record["order"]].append(record)
    following = {"new": {"partial"}, "partial": {"partial", "filled", "cancelled"}, "filled": {"new"}}
    following["cancelled"] = {"new"}
    ended = set()
    for versions in history.values():
        for before, after in itertools.pairwise(versions):
            assert after["status"] in following[before["status"]], (before, after)
            assert after != before, "every update changes something"
            if after["status"] == "new":
                assert after["client_order_id"] != before["client_order_id"], "a new order in the slot"
                assert after["filled"] == 0
            else:
                assert after["client_order_id"] == before["client_order_id"]
                assert before["filled"] <= after["filled"] <= after["qty"]
            ended.add(after["status"])
    assert {"filled", "cancelled"} <= ended
    assert all(r["filled"] == r["qty"] for r in records if r["status"] == "filled")


def test_an_order_s_delta_is_a_fraction_of_the_order(spark: SparkSession) -> None:
    records = as_records(orders_from_rate(rate(spark, 4000, 1000), 500))
    held: dict[int, dict[str, Any]] = {}
    patch_sizes, record_sizes = [], []
    for record in records:
        before = held.get(record["order"])
        held[record["order"]] = record
        if before is not None and record["status"] != "new":
            patch = jsonpatch.make_patch(before, record).patch
            patch_sizes.append(len(orjson.dumps(patch)))
            record_sizes.append(len(orjson.dumps(record)))
    assert len(record) >= 20, "a record as wide as a blotter's"
    assert sum(patch_sizes) < 0.45 * sum(record_sizes), "a fill changes a few fields of many"
