"""The demo pipelines, on Spark's ``rate`` source:

- simulated trades aggregated per trader and 10-second window into the ``positions`` topic
  (windowed PnL, delta published),
- an order book walking through its lifecycle (new, partial, filled, cancelled) into ``orders``,
  so that a dashboard filtered on open orders sees them leave.

    python -m spark_feeds.demo --url ws://127.0.0.1:8000/ws [--rows-per-second 20] [--checkpoint DIR]
        [--transactions off|batch|partition] [--stamp COLUMN]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from .session import local_session
from .sink import ProtocolSink, add_feed_options, client_name_for
from .transforms import orders_from_rate, positions_from_ticks, stamped, ticks_from_rate


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m spark_feeds.demo", description="the demo pipelines")
    parser.add_argument("--url", required=True, help="the server's WebSocket, ws://H:P/ws")
    parser.add_argument("--rows-per-second", type=int, default=20)
    parser.add_argument(
        "--checkpoint", help="where the queries keep their checkpoints (default: a new temp dir)"
    )
    parser.add_argument("--trigger-seconds", type=float, default=1.0)
    add_feed_options(parser)
    return parser.parse_args(argv)


def start(spark: Any, args: argparse.Namespace) -> list[Any]:
    """Start both queries; returns them."""
    base = Path(args.checkpoint or tempfile.mkdtemp(prefix="sowpush-demo-"))
    trigger = f"{args.trigger_seconds} seconds"

    def rate() -> Any:
        return spark.readStream.format("rate").option("rowsPerSecond", args.rows_per_second).load()

    positions = positions_from_ticks(ticks_from_rate(rate()))
    orders = orders_from_rate(rate())
    queries = []
    for name, frame, mode, output in (
        ("positions", positions, "delta_publish", "update"),
        ("orders", orders, "publish", "append"),
    ):
        checkpoint = base / name
        rows = stamped(frame, args.stamp) if args.stamp else frame
        client_name = client_name_for(checkpoint, name)
        sink = ProtocolSink(args.url, name, client_name, mode=mode, transactions=args.transactions)
        queries.append(
            rows.writeStream.outputMode(output)
            .foreachBatch(sink)
            .option("checkpointLocation", str(checkpoint))
            .trigger(processingTime=trigger)
            .queryName(f"demo-{name}")
            .start()
        )
    return queries


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    spark = local_session("sowpush demo")
    start(spark, args)
    spark.streams.awaitAnyTermination()


if __name__ == "__main__":
    main()
