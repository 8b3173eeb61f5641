"""``--workers N``: N cluster nodes on one machine, behind one listening socket.

One Python process serves sockets on one core. With ``[cluster]`` every node keeps its state in
step through Redis, so N node processes can share one port: this parent holds the port, starts N
workers (each a whole node: hub, engine, Redis reader and writer), each listening on the port with
its own ``SO_REUSEPORT`` socket, and the kernel spreads new connections evenly among them (one
shared listening socket would let whichever process wakes first take most of them). The parent
logs the one ``listening on`` line once a worker accepts, starts a worker again when one dies, and
on SIGINT/SIGTERM stops them all cleanly (each closes its sockets with 1001) before it exits.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import socket
import time
from multiprocessing.process import BaseProcess
from multiprocessing.synchronize import Event as EventType
from types import FrameType

from .core.config import Config
from .runtime.reload import with_current_auth

log = logging.getLogger("server")

STOP_GRACE_S = 15.0  # a worker that has not stopped by then is killed
RESTART_PAUSE_S = 1.0  # between a worker's death and its replacement
START_TIMEOUT_S = 60.0  # for every worker to listen


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    return sock


def run_worker(config: Config, port: int, listening: EventType) -> None:
    """A worker process: one node listening on ``port`` beside its siblings (``listening`` is set
    once it accepts connections)."""
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # until the node listens and reloads [auth] on it
    sock = bind(config.server.host, port)
    from .node import build_server  # noqa: PLC0415 (the spawned child imports uvicorn itself)

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("uvicorn.error").setLevel(logging.WARNING)
    server = build_server(with_current_auth(config))
    server.announce = False
    server.on_listening = listening.set
    server.run(sockets=[sock])


def serve_workers(config: Config, count: int) -> int:
    settings = config.server
    sock = bind(settings.host, settings.port)  # holds the port (0: picks one) without listening
    port = sock.getsockname()[1]
    context = multiprocessing.get_context("spawn")
    stopping = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    def start(listening: EventType) -> BaseProcess:
        process = context.Process(target=run_worker, args=(config, port, listening), daemon=False)
        process.start()
        return process

    events = [context.Event() for _ in range(count)]
    workers = [start(event) for event in events]

    def reload(signum: int, frame: FrameType | None) -> None:
        for worker in workers:  # each node reloads [auth] from the file itself (PROTOCOL 6.8)
            if worker.is_alive() and worker.pid is not None:
                os.kill(worker.pid, signal.SIGHUP)

    signal.signal(signal.SIGHUP, reload)
    deadline = time.monotonic() + START_TIMEOUT_S
    while not stopping and not all(event.is_set() for event in events) and time.monotonic() < deadline:
        if not all(worker.is_alive() for worker in workers):
            break
        time.sleep(0.05)
    if all(event.is_set() for event in events):
        log.info("listening on http://%s:%d (%d workers)", sock.getsockname()[0], port, count)
    else:
        log.error("not every worker started listening on port %d; stopping", port)
        stopping = True
    while not stopping:
        time.sleep(0.2)
        for index, worker in enumerate(workers):
            if not worker.is_alive() and not stopping:
                log.error(
                    "worker %d (pid %s) exited with %s; starting another", index, worker.pid, worker.exitcode
                )
                time.sleep(RESTART_PAUSE_S)
                workers[index] = start(context.Event())
    for worker in workers:
        if worker.is_alive() and worker.pid is not None:
            worker.terminate()  # SIGTERM: the node closes its sockets with 1001 and stops
    deadline = time.monotonic() + STOP_GRACE_S
    for worker in workers:
        worker.join(max(0.0, deadline - time.monotonic()))
        if worker.is_alive():
            worker.kill()
            worker.join()
    sock.close()
    return 0
