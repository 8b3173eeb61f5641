"""Stream new JSON-lines or CSV files dropped in a directory into a topic.

    python -m spark_feeds.files --url ws://127.0.0.1:8000/ws --topic orders --path ./incoming \\
        --format json --checkpoint ./checkpoints/orders [--mode publish|delta_publish] \\
        [--trigger available-now|once|<seconds>] [--client-name NAME] [--schema "order LONG, qty LONG"]
        [--transactions off|batch|partition] [--stamp COLUMN]

The schema is inferred from the files unless ``--schema`` gives it (a Spark DDL string).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from . import checks
from .console import Stop, log_lines, run_until_stopped
from .session import local_session
from .sink import add_feed_options
from .stream import publish_stream
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


def start(spark: Any, args: argparse.Namespace) -> Any:
    """The streaming query, started."""
    reader = spark.readStream.format(args.format)
    if args.format == "csv":
        reader = reader.option("header", "true").option("inferSchema", "true")
    if args.schema:
        reader = reader.schema(args.schema)
    rows = reader.load(args.path)
    if args.stamp:
        rows = stamped(rows, args.stamp)
    return publish_stream(
        rows,
        url=args.url,
        topic=args.topic,
        checkpoint=args.checkpoint,
        mode=args.mode,
        trigger=args.trigger,
        transactions=args.transactions,
        client_name=args.client_name,
    )


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    checks.server_answers(args.url)  # before Spark starts: a wrong URL costs one line
    log_lines()
    stop = Stop()
    stop.install()
    spark = local_session(f"sowpush files -> {args.topic}")
    stop.install()  # again: PySpark's SparkContext puts in a SIGINT handler of its own
    sys.exit(run_until_stopped(spark, [start(spark, args)], stop))


if __name__ == "__main__":
    main()
