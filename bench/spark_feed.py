"""Spark into the SOW: rows per second from a micro-batch through the sink, and the time from the
batch's commit (the sink returns once the server has acknowledged it) to a subscriber's last
delivery, for 10,000 rows. Then what transactions cost: batches of 10,000 rows sent as plain
publishes, as one transaction per batch and one per partition (4), in interleaved rounds, with a
subscriber reading everything: wall time and the server's CPU time.

    .venv/bin/python bench/spark_feed.py [--rows 300000] [--durable] [--rounds 5]

The micro-batch is a DataFrame of generated rows given to the sink as foreachBatch would.
"""

from __future__ import annotations

import tempfile
import threading
import time
from pathlib import Path

import orjson
from harness import arguments, cpu_seconds, free_port, serve, spread
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from websockets.sync.client import connect

from spark_feeds.sink import ProtocolSink


def rows(spark: SparkSession, count: int, offset: int = 0):  # type: ignore[no-untyped-def]
    return spark.range(offset, offset + count).select(
        F.col("id").alias("order"),
        F.element_at(
            F.array(*[F.lit(s) for s in ("AAPL", "MSFT", "NVDA")]), (F.col("id") % 3 + 1).cast("int")
        ).alias("sym"),
        (F.col("id") % 1000).alias("qty"),
        (F.lit(100.0) + F.col("id") % 500 / 10).alias("px"),
        F.when(F.col("id") % 2 == 0, "B").otherwise("S").alias("side"),
        F.lit("open").alias("status"),
    )


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--durable", action="store_true", help="publish into a durable topic (log + fsync)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the transactions comparison")
    args = parser.parse_args()
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    with tempfile.TemporaryDirectory() as work:
        port = free_port()
        durable = "true" if args.durable else "false"
        server = serve(
            f'[[topic]]\nname = "orders"\nkey = ["/order"]\ndurable = {durable}\n', Path(work), port
        )
        url = f"ws://127.0.0.1:{port}/ws"
        try:
            sink = ProtocolSink(url, "orders", "spark:bench")
            batch = rows(spark, args.rows).cache()
            batch.count()  # materialise, so the figure is the sink's, not Spark's generation
            started = time.perf_counter()
            sink(batch, 0)
            elapsed = time.perf_counter() - started
            print(
                f"{args.rows:,} rows in {elapsed:.2f} s: {args.rows / elapsed:,.0f} rows/s into the SOW "
                f"({'durable' if args.durable else 'not durable'}; target 100,000/s)"
            )

            last_delivery = [0.0]
            ready = threading.Event()

            def subscriber() -> None:
                with connect(url, max_size=None) as ws:
                    ws.send(orjson.dumps({"c": "subscribe", "t": "orders", "cid": "s"}).decode())
                    ws.recv()
                    ready.set()
                    seen = 0
                    while seen < 10_000:
                        seen += ws.recv().count('"c":"p"')
                    last_delivery[0] = time.perf_counter()

            watcher = threading.Thread(target=subscriber)
            watcher.start()
            ready.wait()
            small = rows(spark, 10_000, offset=args.rows).cache()
            small.count()
            began = time.perf_counter()
            sink(small, 1)
            committed = time.perf_counter()
            watcher.join(60)
            print(
                f"10,000 rows: the batch committed {1000 * (committed - began):.0f} ms after it began; "
                f"the subscriber's last delivery came {1000 * (last_delivery[0] - committed):+.0f} ms "
                "from the commit"
            )
            compare_transactions(spark, url, server.pid, args.rounds)
        finally:
            server.terminate()
            server.wait()
            spark.stop()


def compare_transactions(spark: SparkSession, url: str, pid: int, rounds: int) -> None:
    count = 10_000
    batch = rows(spark, count, offset=10_000_000).repartition(4).cache()
    batch.count()
    stop = threading.Event()

    def subscriber() -> None:  # reads everything, so the fan-out and its frames are paid for
        with connect(url, max_size=None) as ws:
            ws.send(orjson.dumps({"c": "subscribe", "t": "orders", "cid": "tx-watch"}).decode())
            while not stop.is_set():
                try:
                    ws.recv(timeout=0.2)
                except TimeoutError:
                    continue

    watcher = threading.Thread(target=subscriber)
    watcher.start()
    modes = ("off", "batch", "partition")
    sinks = {mode: ProtocolSink(url, "orders", f"spark:bench-tx-{mode}", transactions=mode) for mode in modes}
    wall: dict[str, list[float]] = {mode: [] for mode in modes}
    cpu: dict[str, list[float]] = {mode: [] for mode in modes}
    try:
        for round_ in range(rounds):
            for mode in modes:  # interleaved: each round runs every mode once
                cpu_before, started = cpu_seconds(pid), time.perf_counter()
                sinks[mode](batch, round_)
                wall[mode].append(count / (time.perf_counter() - started))
                cpu[mode].append(1000 * (cpu_seconds(pid) - cpu_before))
    finally:
        stop.set()
        watcher.join()
    print(f"\ntransactions: {count:,} rows per batch, {rounds} interleaved rounds, min / median / max")
    for mode in modes:
        print(f"  {mode:<10} {spread(wall[mode])} rows/s   server CPU {spread(cpu[mode])} ms per batch")


if __name__ == "__main__":
    main()
