"""Composition root: read the configuration and arguments, then run one node (node.py) or, with
``--workers N``, N cluster nodes behind one port (workers.py).

python -m server [--config FILE] [--host H] [--port P] [--data-dir DIR] [--recover-damaged-log]
                 [--workers N]
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import tomllib
from dataclasses import replace
from importlib import resources

from .core.errors import ConfigError, StartupError
from .core.settings.config import Config, load_config, parse_config
from .node import build_server
from .workers import serve_workers

log = logging.getLogger("server")


def load_demo_config() -> Config:
    text = resources.files("server").joinpath("demo.toml").read_text(encoding="utf-8")
    return parse_config(tomllib.loads(text))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m server", description="Real-time SOW push server")
    parser.add_argument("--config", help="TOML configuration file (default: the built-in demo)")
    parser.add_argument("--host", help="address to listen on (overrides the file)")
    parser.add_argument("--port", type=int, help="port to listen on; 0 picks a free one (overrides the file)")
    parser.add_argument("--data-dir", help="directory for durable state (overrides the file)")
    parser.add_argument(
        "--recover-damaged-log",
        action="store_true",
        help="start even when acknowledged transaction log frames are damaged: keep the damaged bytes "
        "aside and recover every intact frame (the changes in the damaged ones are lost)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="run N nodes of the configuration's [cluster] on one machine, behind one port "
        "(one per core serves the most sockets)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("uvicorn.error").setLevel(logging.WARNING)
    try:
        config = load_config(args.config) if args.config else load_demo_config()
        config = config.with_overrides(args.host, args.port, args.data_dir)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.recover_damaged_log:
        config = replace(config, server=replace(config.server, recover_damaged_log=True))
    # Not fatal before a node listens (recovering its log, starting workers): it then reloads [auth].
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    if args.workers != 1:
        if args.workers < 1:
            print(f"error: --workers: must be 1 or more, got {args.workers}", file=sys.stderr)
            return 2
        if config.cluster is None:
            print(
                "error: --workers needs a [cluster] section: nodes share their state through Redis",
                file=sys.stderr,
            )
            return 2
        return serve_workers(config, args.workers)
    server = build_server(config)
    try:
        server.recover()
    except (StartupError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 3
    server.run()
    return 0 if server.started else 1


if __name__ == "__main__":
    sys.exit(main())
