"""Stream new JSON-lines or CSV files dropped in a directory into a topic.

    python -m spark_feeds.files --url ws://127.0.0.1:8000/ws --topic orders --path ./incoming \\
        --format json --checkpoint ./checkpoints/orders [--mode publish|delta_publish] \\
        [--trigger available-now|once|<seconds>] [--client-name NAME] [--schema "order LONG, qty LONG"]
        [--transactions off|batch|partition] [--stamp COLUMN]

The schema is inferred from the files unless ``--schema`` gives it (a Spark DDL string).
"""

from __future__ import annotations

import argparse
import logging
from typing import Any

from . import checks
from .session import apply_trigger, local_session
from .sink import ProtocolSink, add_feed_options, client_name_for
from .transforms import stamped


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = checks.OneLineParser(
        prog="python -m spark_feeds.files",
        description=__doc__.splitlines()[0],
    )
    parser.add_argument(
        "--url", required=True, type=checks.websocket_url, help="the server's WebSocket, ws://H:P/ws"
    )
    parser.add_argument("--topic", required=True, help="the topic the rows are published into")
    parser.add_argument("--path", required=True, type=checks.folder, help="the directory new files arrive in")
    parser.add_argument(
        "--format",
        choices=("json", "csv"),
        default="json",
        help="JSON lines, or CSV with a header (default: json)",
    )
    parser.add_argument("--checkpoint", required=True, help="the query's checkpoint directory (exactly once)")
    parser.add_argument(
        "--mode",
        choices=("publish", "delta_publish"),
        default="publish",
        help="how each row is sent (default: publish)",
    )
    parser.add_argument(
        "--trigger",
        type=checks.trigger,
        default="available-now",
        help="available-now (what is there, then stop; the default), once, or a micro-batch every N seconds",
    )
    parser.add_argument("--client-name", help="default: one kept in the checkpoint directory")
    parser.add_argument("--schema", help="a Spark DDL schema; default: inferred from the files")
    add_feed_options(parser)
    return parser.parse_args(argv)


def build(spark: Any, args: argparse.Namespace) -> Any:
    """The streaming query, not started."""
    reader = spark.readStream.format(args.format)
    if args.format == "csv":
        reader = reader.option("header", "true").option("inferSchema", "true")
    if args.schema:
        reader = reader.schema(args.schema)
    rows = reader.load(args.path)
    if args.stamp:
        rows = stamped(rows, args.stamp)
    client_name = args.client_name or client_name_for(args.checkpoint, args.topic)
    sink = ProtocolSink(args.url, args.topic, client_name, mode=args.mode, transactions=args.transactions)
    writer = rows.writeStream.foreachBatch(sink).option("checkpointLocation", args.checkpoint)
    return apply_trigger(writer, args.trigger)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    checks.server_answers(args.url)  # before Spark starts: a wrong URL costs one line
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    spark = local_session(f"sowpush files -> {args.topic}")
    build(spark, args).start().awaitTermination()


if __name__ == "__main__":
    main()
