"""Composition root: read the configuration, build the hub and the app, run uvicorn.

python -m server [--config FILE] [--host H] [--port P] [--data-dir DIR] [--recover-damaged-log]
"""

from __future__ import annotations

import argparse
import logging
import os
import secrets
import socket
import sys
import tomllib
from dataclasses import replace
from importlib import resources
from pathlib import Path
from types import FrameType

import uvicorn

from .asgi.app import create_app
from .asgi.uvicorn_protocol import guarded_http_protocol
from .core.config import Config, load_config, parse_config
from .core.errors import ConfigError, StartupError
from .runtime.hub import Hub
from .runtime.logstore import LogStore
from .runtime.redis_log import RedisLog

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
    return parser.parse_args(argv)


class PushServer(uvicorn.Server):
    """uvicorn's server, with recovery before it listens, our start-up line, and a shutdown that
    closes sockets with 1001 and leaves every acknowledged durable publish on disk."""

    def __init__(self, config: uvicorn.Config, hub: Hub, store: LogStore | None) -> None:
        super().__init__(config)
        self.hub = hub
        self.store = store

    def recover(self) -> None:
        """Rebuild durable state and claim a new LSN epoch, before anything listens (raises
        ``StartupError`` when the log needs an operator)."""
        if self.store is not None:
            self.store.recover()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        if self.store is not None:
            self.store.start()
        self.hub.start()
        await super().startup(sockets)
        if self.started and self.servers:
            host, port = self.servers[0].sockets[0].getsockname()[:2]
            log.info("listening on http://%s:%d", host, port)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        # SIGINT/SIGTERM ask for a clean stop, so exit 0 afterwards instead of re-raising the signal.
        captured = getattr(self, "_captured_signals", None)
        if isinstance(captured, list):
            captured.clear()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()
        await self.hub.shutdown()
        if self.store is not None:
            await self.store.close()
        await super().shutdown(sockets)


def node_name(port: int) -> str:
    """A name no other node of the cluster has, now or after a restart of this one."""
    return f"{socket.gethostname()}-{port}-{os.getpid()}-{secrets.token_hex(4)}"


def build_server(config: Config) -> PushServer:
    settings = config.server
    hub = Hub(config)
    store = None
    if config.cluster is not None:
        # The shared log in Redis is the cluster's transaction log: no log on the node's disk.
        hub.cluster = RedisLog(hub.engine, config.cluster, node_name(settings.port))
    elif any(topic.durable for topic in config.topics):
        data_dir = Path(settings.data_dir)
        store = LogStore(
            data_dir,
            hub.engine,
            settings.log_retention_s,
            settings.log_retention_bytes,
            settings.recover_damaged_log,
        )
        hub.store = store
    uv_config = uvicorn.Config(
        create_app(hub),
        host=settings.host,
        port=settings.port,
        # Bounds the connections that have not sent a complete request head (half-open upgrades).
        http=guarded_http_protocol(),
        ws="websockets-sansio",
        ws_max_size=settings.max_message_bytes,
        ws_per_message_deflate=settings.websocket_deflate,
        ws_ping_interval=settings.heartbeat_s,
        ws_ping_timeout=settings.heartbeat_s,
        loop="uvloop",
        lifespan="off",
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=5,
    )
    return PushServer(uv_config, hub, store)


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
