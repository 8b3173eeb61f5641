"""Spark into the SOW: rows per second from a micro-batch through the sink, and the time from the
batch's commit (the sink returns once the server has acknowledged it) to a subscriber's last
delivery, for 10,000 rows.

    .venv/bin/python bench/spark_feed.py [--rows 300000] [--durable]

The micro-batch is a DataFrame of generated rows given to the sink as foreachBatch would.
"""

from __future__ import annotations

import tempfile
import threading
import time
from pathlib import Path

import orjson
from harness import arguments, free_port, serve
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
        finally:
            server.terminate()
            server.wait()
            spark.stop()


if __name__ == "__main__":
    main()
