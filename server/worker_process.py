"""What runs in each ``--workers`` process (server/workers.py starts and watches them), and what
it shares with its parent: the listening flags and loop beats (``Serving``), its configuration
(pickled), and a watch on the parent itself."""

from __future__ import annotations

import asyncio
import ctypes
import dataclasses
import functools
import io
import logging
import os
import pickle
import signal
import socket
import sys
import threading
import time
from multiprocessing.context import SpawnContext
from typing import Any

from .core.settings.config import Config
from .runtime.reload import with_current_auth
from .runtime.siblings import Siblings

log = logging.getLogger("server")

PARENT_CHECK_S = 0.5  # how often a worker looks whether its parent is still there
BEAT_S = 0.5  # how often a worker's event loop says it runs (Serving.beat)
# A worker whose loop has not said so for this long is not serving: /healthz stops counting it
# (a step of the loop may take a second or two: a big transaction, the collector's freeze).
SILENT_S = 5.0


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    return sock


class Serving:
    """Which workers accept connections: one byte per worker, in memory shared with every worker.
    Worker ``i`` sets byte ``i`` once it listens; the parent clears it when it finds worker ``i``
    dead (a killed worker cannot), before it starts another, so a byte has one writer at a time
    and needs no lock. Beside it, when worker ``i``'s event loop last ran (``beat``, the system's
    monotonic clock, which every process reads alike): a worker that listens but whose loop has
    stopped answers nobody."""

    def __init__(self, context: SpawnContext, count: int) -> None:
        self.flags = context.RawArray(ctypes.c_ubyte, count)
        self.beats = context.RawArray(ctypes.c_double, count)
        self.count = count

    def listening(self, index: int) -> None:
        self.beat(index)
        self.flags[index] = 1

    def beat(self, index: int) -> None:
        self.beats[index] = time.monotonic()

    def gone(self, index: int) -> None:
        self.flags[index] = 0

    def listens(self, index: int) -> bool:
        return bool(self.flags[index])

    def silent_for(self, index: int) -> float:
        """How long since worker ``index``'s loop last ran."""
        return time.monotonic() - self.beats[index]

    def capacity(self) -> tuple[int, int]:
        """(workers that accept connections and whose loop runs, workers)."""
        running = [self.flags[i] and self.silent_for(i) < SILENT_S for i in range(self.count)]
        return sum(running), self.count


class _ConfigPickler(pickle.Pickler):
    """Pickles a configuration for a worker: every dataclass in it as its class and the fields
    its constructor takes. (A compiled frozen dataclass cannot be unpickled field by field, and an
    order's sort key, made by its constructor, is a closure.)"""

    def reducer_override(self, obj: Any) -> Any:
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            values = {field.name: getattr(obj, field.name) for field in dataclasses.fields(obj) if field.init}
            return _rebuild, (type(obj), values)
        return NotImplemented


def _rebuild(cls: type[Any], values: dict[str, Any]) -> Any:
    return cls(**values)


def pickled(config: Config) -> bytes:
    buffer = io.BytesIO()
    _ConfigPickler(buffer).dump(config)
    return buffer.getvalue()


def watch_parent(parent: int, index: int) -> None:
    """Stop this worker cleanly (SIGTERM to itself) once process ``parent`` is no longer its
    parent: a parent killed with SIGKILL stops nothing, and its workers would serve on,
    unwatched, never restarted, beside the workers of the next start on the same port."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_S)
        log.error("worker %d: its parent (pid %d) is gone; stopping", index, parent)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def run_worker(
    pickled_config: bytes, port: int, index: int, serving: Serving, directory: str, parent: int, quiet: bool
) -> None:
    """Worker ``index`` of parent ``parent``: one node listening on ``port`` beside its siblings,
    and answering them on a Unix socket in ``directory`` (runtime/siblings.py). ``quiet``: a failed
    start of this worker was reported, its error printed; if this one fails to build its node too
    (broken code on disk, say), it exits 1 without printing the traceback again."""
    watch_parent(parent, index)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # until the node listens and reloads [auth] on it
    config: Config = pickle.loads(pickled_config)
    try:
        sock = bind(config.server.host, port)
        from .node import build_server  # noqa: PLC0415 (the spawned child imports uvicorn itself)

        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        logging.getLogger("uvicorn.error").setLevel(logging.WARNING)
        siblings = Siblings(directory, index, serving.count, serving.capacity)
        server = build_server(with_current_auth(config), siblings)
    except Exception:
        if not quiet:
            raise
        sys.exit(1)
    server.announce = False
    server.on_listening = functools.partial(_listening, serving, index)
    server.run(sockets=[sock])


_beating: set[asyncio.Task[None]] = set()  # the beat task, kept from the collector


def _listening(serving: Serving, index: int) -> None:
    """The worker listens: say so, and say every ``BEAT_S`` from its event loop that it runs."""
    serving.listening(index)

    async def beat() -> None:
        while True:
            serving.beat(index)
            await asyncio.sleep(BEAT_S)

    task = asyncio.get_running_loop().create_task(beat(), name="worker-beat")
    _beating.add(task)
