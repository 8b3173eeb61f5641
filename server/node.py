"""One node: the hub, its log (on disk, or the cluster's in Redis) and uvicorn, built from a
configuration, with recovery before it listens and a shutdown that loses nothing acked."""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import signal
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType

import uvicorn

from .asgi.app import create_app
from .asgi.uvicorn_protocol import BACKLOG, guarded_http_protocol
from .asgi.uvicorn_websocket import LeanWebSocketProtocol
from .asgi.whole_port import answering
from .core import native
from .core.settings.config import Config
from .runtime.hub import Hub
from .runtime.logstore import LogStore
from .runtime.reload import Coalesced
from .runtime.siblings import Siblings
from .runtime.status import Status

log = logging.getLogger("server")


class PushServer(uvicorn.Server):
    """uvicorn's server, with recovery before it listens, our start-up line, and a shutdown that
    closes sockets with 1001 and leaves every acknowledged durable publish on disk."""

    def __init__(
        self,
        config: uvicorn.Config,
        hub: Hub,
        store: LogStore | None,
        siblings: Siblings | None,
        status: Status,
    ) -> None:
        super().__init__(config)
        self.hub = hub
        self.store = store
        self.siblings = siblings  # when it is one of --workers: they ask it for its figures
        self.status = status
        self._collecting: asyncio.Task[None] | None = None  # the collector's (runtime/collector.py)
        self.announce = True  # log the "listening on" line (not a worker's: its parent does)
        self.on_listening: Callable[[], None] = lambda: None
        # SIGHUPs, coalesced: those that arrive while a reload runs make one more, not one each.
        self._reloads = Coalesced(self.reload_auth, "SIGHUP: reloading [auth]")

    def recover(self) -> None:
        """Rebuild durable state and claim a new LSN epoch, before anything listens (raises
        ``StartupError`` when the log needs an operator)."""
        if self.store is not None:
            self.store.recover()
        self.hub.engine.broker.changes.begin_run()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        if self.store is not None:
            self.store.start()
        self.hub.start()
        # No full collection walks what the node holds (runtime/collector.py): what it has loaded
        # is frozen before it listens (a cluster node's is, again, once loaded from Redis).
        self.hub.collector.start()
        self.hub.collector.collect_all("start-up")
        self._collecting = asyncio.create_task(self.hub.collector.run(), name="collector")
        await super().startup(sockets)
        if self.started and threading.current_thread() is threading.main_thread():
            # uvicorn takes SIGINT and SIGTERM (handle_exit); SIGHUP reloads [auth]
            # (docs/protocol.md, Reloading entitlements).
            asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, self._reloads.ask)
        if self.started and self.servers:
            log.info("%s", native.describe())  # which core runs, and if pure, why
            if self.siblings is not None:  # before it counts as serving: its siblings may ask then
                await self.siblings.serve(answering(self.hub, self.status, self.siblings))
            if self.announce:
                host, port = self.servers[0].sockets[0].getsockname()[:2]
                log.info("listening on http://%s:%d", host, port)
            self.on_listening()

    def reload_auth(self) -> None:
        if not self.hub.shutting_down:
            self.hub.reload_auth()

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        # SIGINT/SIGTERM ask for a clean stop, so exit 0 afterwards instead of re-raising the signal.
        captured = getattr(self, "_captured_signals", None)
        if isinstance(captured, list):
            captured.clear()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        if self._collecting is not None:
            self._collecting.cancel()  # no collection of everything while every socket closes
        for server in self.servers:
            server.close()
        if self.siblings is not None:
            await self.siblings.close()
        await self.hub.shutdown()
        if self.store is not None:
            await self.store.close()
        await super().shutdown(sockets)
        self.hub.collector.stop()


def node_name(port: int) -> str:
    """A name no other node of the cluster has, now or after a restart of this one."""
    return f"{socket.gethostname()}-{port}-{os.getpid()}-{secrets.token_hex(4)}"


def build_server(config: Config, siblings: Siblings | None = None) -> PushServer:
    """The node of ``config``; ``siblings`` when it is one of ``--workers``."""
    settings = config.server
    # With [cluster] the shared log in Redis is the cluster's transaction log: none on the node's disk.
    hub = Hub(config, node=node_name(settings.port) if config.cluster is not None else "")
    store = None
    if config.cluster is None and any(topic.durable for topic in config.topics):
        data_dir = Path(settings.data_dir)
        store = LogStore(
            data_dir,
            hub.engine.broker,
            hub.pump,
            settings.log_retention_s,
            settings.log_retention_bytes,
            settings.recover_damaged_log,
        )
        hub.store = store
    status = Status(hub)
    uv_config = uvicorn.Config(
        create_app(hub, status, siblings),
        host=settings.host,
        port=settings.port,
        # Bounds the connections that have not sent a complete request head (half-open upgrades).
        http=guarded_http_protocol(),
        backlog=BACKLOG,  # a reconnect storm of thousands waits in the kernel's accept queue
        ws=LeanWebSocketProtocol,  # uvicorn's sans-I/O protocol, lighter per idle socket
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
    return PushServer(uv_config, hub, store, siblings, status)
