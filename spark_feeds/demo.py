"""The demo pipelines, on Spark's ``rate`` source:

- simulated trades accumulated per trader into the ``positions`` topic: position, average price,
  realised and unrealised P&L over every trade since the query began (delta published),
- a book of orders, each moving through new, partially filled, filled or cancelled at its own
  random moments, into ``orders``, so that a dashboard filtered on open orders sees them come
  and leave.

    python -m spark_feeds.demo --url ws://127.0.0.1:8000/ws [--orders-per-second 2000]
        [--trades-per-second 500] [--book 8000] [--checkpoint DIR] [--trigger-seconds 1]
        [--transactions off|batch|partition] [--stamp COLUMN]

It logs a summary every ``--summary-seconds``; Ctrl-C stops it quietly.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from . import checks
from .console import Stop, log_lines, run_until_stopped
from .session import local_session
from .sink import add_feed_options
from .stream import publish_stream
from .transforms import BOOK, orders_from_rate, positions_from_ticks, stamped, ticks_from_rate

log = logging.getLogger("spark_feeds.demo")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = checks.OneLineParser(prog="python -m spark_feeds.demo", description="the demo pipelines")
    parser.add_argument(
        "--url", required=True, type=checks.websocket_url, help="the server's WebSocket, ws://H:P/ws"
    )
    parser.add_argument(
        "--orders-per-second", type=int, default=2000, help="order updates a second (default: 2000)"
    )
    parser.add_argument(
        "--trades-per-second", type=int, default=500, help="trades into the positions (default: 500)"
    )
    parser.add_argument("--book", type=int, default=BOOK, help=f"orders in the book (default: {BOOK})")
    parser.add_argument(
        "--checkpoint", help="where the queries keep their checkpoints (default: a new temp dir)"
    )
    parser.add_argument(
        "--trigger-seconds", type=float, default=1.0, help="seconds between micro-batches (default: 1)"
    )
    parser.add_argument(
        "--summary-seconds", type=float, default=10.0, help="seconds between summary lines (default: 10)"
    )
    parser.add_argument(
        "--heartbeat",
        type=Path,
        metavar="FILE",
        help="touch FILE every second while every query runs, for a health check (default: none)",
    )
    add_feed_options(parser)
    return parser.parse_args(argv)


def start(spark: Any, args: argparse.Namespace) -> list[Any]:
    """Start both queries; returns them."""
    base = Path(args.checkpoint or tempfile.mkdtemp(prefix="sowpush-demo-"))
    # One partition: a batch's rows stay in the source's order, so of two steps of one order in
    # a batch the later is published last; and the positions' state lives in one partition.
    spark.conf.set("spark.sql.shuffle.partitions", "1")

    def rate(rows_per_second: int) -> Any:
        reader = spark.readStream.format("rate").option("rowsPerSecond", rows_per_second)
        return reader.option("numPartitions", 1).load()

    pipelines = (
        ("positions", positions_from_ticks(ticks_from_rate(rate(args.trades_per_second))), "update"),
        ("orders", orders_from_rate(rate(args.orders_per_second), args.book), "append"),
    )
    return [
        publish_stream(
            stamped(frame, args.stamp) if args.stamp else frame,
            url=args.url,
            topic=topic,
            checkpoint=base / topic,
            # Positions change most of their fields each time, and a trader's record is theirs:
            # delta publish; an order is replaced whole.
            mode="delta_publish" if topic == "positions" else "publish",
            output_mode=output_mode,
            trigger=args.trigger_seconds,
            transactions=args.transactions,
            query_name=f"demo-{topic}",
        )
        for topic, frame, output_mode in pipelines
    ]


class Summary:
    """One line: the rows each query took in since the last line, a second, and its last batch."""

    def __init__(self, queries: list[Any]) -> None:
        self.queries = queries
        self.seen: dict[str, int] = {}  # query name -> the last batch counted
        self.since = time.monotonic()

    def __call__(self) -> str:
        now = time.monotonic()
        elapsed, self.since = max(now - self.since, 1e-3), now
        parts = []
        for query in self.queries:
            last = self.seen.get(query.name, -1)
            fresh = [p for p in query.recentProgress if p["batchId"] > last]
            if fresh:
                self.seen[query.name] = fresh[-1]["batchId"]
            rows = sum(p["numInputRows"] for p in fresh)
            parts.append(f"{query.name} {rows / elapsed:,.0f} rows/s ({len(fresh)} batches)")
        return "; ".join(parts)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    log_lines()
    logging.getLogger("spark_feeds.sink").setLevel(logging.WARNING)  # a line a batch: the summary says it
    checks.server_answers(args.url)
    stop = Stop()
    stop.install()  # a Ctrl-C while Spark starts is a stop too
    spark = local_session("sowpush demo")
    stop.install()  # again: PySpark's SparkContext puts in a SIGINT handler of its own
    queries = start(spark, args)
    log.info("demo feed started: %s", ", ".join(q.name for q in queries))
    summary = Summary(queries)
    sys.exit(run_until_stopped(spark, queries, stop, args.summary_seconds, summary, args.heartbeat))


if __name__ == "__main__":
    main()
