"""``--workers N``: N cluster nodes on one machine, behind one listening socket.

One Python process serves sockets on one core. With ``[cluster]`` every node keeps its state in
step through Redis, so N node processes can share one port: this parent holds the port, starts N
workers (each a whole node: hub, engine, Redis reader and writer), each listening on the port with
its own ``SO_REUSEPORT`` socket, and the kernel spreads new connections evenly among them (one
shared listening socket would let whichever process wakes first take most of them). The parent
logs the one ``listening on`` line once every worker accepts, and on SIGINT/SIGTERM stops them all
cleanly (each closes its sockets with 1001) before it exits.

A worker that dies is started again: at once if it had run for ``STEADY_S``, otherwise after a
pause that doubles with each such death in a row, from ``FIRST_RETRY_S`` up to ``LAST_RETRY_S``, so
a worker that cannot start (broken code on disk, say) is reported once, its traceback printed
once, and tried ever less often instead of failing every second. Which workers accept
connections is shared with every worker (``Serving``), so any worker's ``/healthz`` can say how
many of them serve the port. So is when each worker's event loop last ran: one that has not for
``SILENT_S`` is not counted as serving, and past ``STUCK_S`` (stopped with SIGSTOP, or stuck in
one step) the parent kills it and starts another, as if it had died.

Everything a worker is started with outlives its start: the parent keeps it for the whole run. A
spawned child unpickles its arguments after ``Process.start()`` returns, and ``start()`` drops
them in the parent; an object made for one start (an ``Event``, once) could be finalized, its
named semaphore unlinked, before the child read it, and then no replacement ever started.
"""

from __future__ import annotations

import dataclasses
import logging
import multiprocessing
import os
import shutil
import signal
import socket
import tempfile
import time
from multiprocessing.connection import wait
from multiprocessing.process import BaseProcess
from types import FrameType

from .core.settings.config import Config
from .worker_process import Serving, bind, pickled, run_worker

log = logging.getLogger("server")

STOP_GRACE_S = 15.0  # a worker that has not stopped by then is killed
START_TIMEOUT_S = 60.0  # for every worker to listen
STEADY_S = 30.0  # a worker that ran this long was healthy: its death is not one of a series
FIRST_RETRY_S = 1.0  # the pause after a death within STEADY_S of the start; doubles with each
LAST_RETRY_S = 30.0  # and stops doubling here
WATCH_S = 0.2  # the longest the parent waits before it looks at the signals again
# A worker whose loop has not beaten for this long (by the parent's watching) is killed and
# another started: a stopped (SIGSTOP) or stuck worker kept its SO_REUSEPORT socket, and most
# requests to the port waited on it. (/healthz stops counting it sooner: worker_process.SILENT_S.)
STUCK_S = 15.0
MAX_SOCKET_PATH = 100  # bytes of a Unix socket's path (107 on Linux, 103 on macOS), with room


def ended(exitcode: int | None) -> str:
    if exitcode is None or exitcode >= 0:
        return f"exited with status {exitcode}"
    try:
        return f"was killed by {signal.Signals(-exitcode).name}"
    except ValueError:
        return f"was killed by signal {-exitcode}"


def span(seconds: float) -> str:
    minutes = int(seconds // 60)
    if minutes >= 60:
        return f"{minutes // 60} h {minutes % 60} min"
    return f"{minutes} min {int(seconds % 60)} s" if minutes else f"{seconds:.1f} s"


def after(delay: float) -> str:
    return f"in {delay:g} s" if delay else "now"


@dataclasses.dataclass
class Slot:
    """Worker ``index``'s place: its process, or when the next one is due."""

    index: int
    process: BaseProcess | None = None
    started: float = 0.0
    due: float = 0.0
    failures: int = 0  # deaths in a row, each within STEADY_S of its start
    seen: bool = False  # the parent has seen this process listen
    reported: bool = False  # a failed start was logged: the next ones are not, until one starts
    # The worker's last beat as the parent last read it, and when (by the parent's watch) it last
    # moved: silence is timed by the parent's own watching, so a pause of the whole process group
    # (Ctrl-Z, docker pause, a suspended VM) is no silence of one worker.
    beat: float = 0.0
    heard: float = 0.0
    killed: bool = False  # killed as stuck: said once, and not killed again while it goes

    def pause(self, lived: float) -> float:
        """Counts a death after ``lived`` seconds; returns the pause before the next start."""
        self.failures = 0 if lived >= STEADY_S else self.failures + 1
        return min(FIRST_RETRY_S * 2 ** (self.failures - 1), LAST_RETRY_S) if self.failures else 0.0


class SocketDirectoryError(Exception):
    """The workers' Unix sockets cannot be made (the reason is the message)."""


def socket_directory(count: int) -> str:
    """A new directory for the workers' Unix sockets, where each asks the others for their
    figures: readable by this user alone (mkdtemp makes it 0700), under TMPDIR."""
    try:
        directory = tempfile.mkdtemp(prefix="sowpush-workers-")
    except OSError as error:
        raise SocketDirectoryError(
            f"cannot make the workers' socket directory ({error}): set TMPDIR to a writable directory"
        ) from None
    longest = os.path.join(directory, f"worker-{count - 1}.sock")
    if len(os.fsencode(longest)) > MAX_SOCKET_PATH:
        shutil.rmtree(directory, ignore_errors=True)
        raise SocketDirectoryError(
            f"the workers' sockets would be at {longest}, longer than a Unix socket's path may be "
            f"({MAX_SOCKET_PATH} bytes): set TMPDIR to a shorter directory"
        )
    return directory


class Pool:
    """The workers, and everything they share, kept by the parent for the whole run."""

    def __init__(self, config: Config, port: int, count: int, directory: str) -> None:
        self.config = config
        self.port = port
        self.context = multiprocessing.get_context("spawn")
        self.serving = Serving(self.context, count)
        self.slots = [Slot(index) for index in range(count)]
        self.directory = directory  # removed when the port closes (stop)
        self._watched = time.monotonic()  # when the parent last looked at its workers

    def start(self, slot: Slot) -> None:
        config, parent = pickled(self.config), os.getpid()
        args = (config, self.port, slot.index, self.serving, self.directory, parent, slot.reported)
        slot.process = self.context.Process(target=run_worker, args=args, daemon=False)
        slot.process.start()
        slot.started, slot.seen = time.monotonic(), False
        slot.beat, slot.heard, slot.killed = self.serving.beats[slot.index], slot.started, False

    def listening(self) -> bool:
        return all(self.serving.listens(slot.index) for slot in self.slots)

    def dead(self) -> Slot | None:
        return next((s for s in self.slots if s.process is not None and not s.process.is_alive()), None)

    def watch(self, timeout: float) -> None:
        """Waits up to ``timeout`` for a worker to die or a restart to fall due, then replaces the
        dead whose time has come and logs the replacements that listen."""
        now = time.monotonic()
        pause = min([timeout, *(s.due - now for s in self.slots if s.process is None)])
        wait([s.process.sentinel for s in self.slots if s.process is not None], max(0.0, pause))
        self.listen_to_beats()
        for slot in self.slots:
            if slot.process is not None and slot.process.is_alive() and not slot.killed and self.stuck(slot):
                slot.killed = True
                slot.process.kill()  # (gone at once, unless stuck in the kernel: then a later watch)
                slot.process.join(STOP_GRACE_S / 15)
            if slot.process is not None and not slot.process.is_alive():
                self.died(slot)
            if slot.process is None:
                if time.monotonic() >= slot.due:
                    self.start(slot)
            elif not slot.seen and self.serving.listens(slot.index):
                self.back(slot)

    def listen_to_beats(self) -> None:
        """Note which workers' loops beat since the last watch. After a gap in the parent's own
        watching (the parent paused, or starved of a core, with its workers) every worker counts
        as just heard: their silence is timed from now."""
        now = time.monotonic()
        gap = now - self._watched > 10 * WATCH_S + 1.0
        self._watched = now
        for slot in self.slots:
            beat = self.serving.beats[slot.index]
            if gap or beat != slot.beat:
                slot.beat, slot.heard = beat, now

    def stuck(self, slot: Slot) -> bool:
        """Whether ``slot``'s worker listens but the parent has not heard its loop beat for
        ``STUCK_S`` (stopped, or stuck in one step): said once, as it is killed to be replaced."""
        silent = time.monotonic() - slot.heard
        if not (slot.seen and self.serving.listens(slot.index) and silent > STUCK_S):
            return False
        assert slot.process is not None
        log.error(
            "worker %d (pid %s) has not answered for %.0f s (stopped, or stuck in one step): killing it",
            slot.index, slot.process.pid, silent,
        )  # fmt: skip
        return True

    def died(self, slot: Slot) -> None:
        assert slot.process is not None
        process, now = slot.process, time.monotonic()
        lived, listened = now - slot.started, self.serving.listens(slot.index)
        self.serving.gone(slot.index)
        slot.process = None
        delay = slot.pause(lived)
        slot.due = now + delay
        worker = f"worker {slot.index} (pid {process.pid}) {ended(process.exitcode)}"
        lasted = span(lived)
        serving, count = self.serving.capacity()
        meanwhile = f"({serving} of {count} workers serve meanwhile)"
        if listened:
            log.error(
                "%s after running for %s; starting another %s %s", worker, lasted, after(delay), meanwhile
            )
        elif not slot.reported:
            slot.reported = True
            log.error(
                "%s before it accepted connections, %s after it was started: it cannot start "
                "(see its output above); trying again %s, then less often (up to every %g s) until "
                "one starts %s",
                worker, lasted, after(delay), LAST_RETRY_S, meanwhile,
            )  # fmt: skip
        else:
            log.debug("%s, again; trying again %s", worker, after(delay))
        process.close()

    def back(self, slot: Slot) -> None:
        assert slot.process is not None
        slot.seen, slot.reported = True, False
        serving, count = self.serving.capacity()
        pid = slot.process.pid
        log.info(
            "worker %d (pid %s) accepts connections (%d of %d workers serve)", slot.index, pid, serving, count
        )

    def stop(self) -> None:
        """SIGTERM to every worker (each closes its sockets with 1001 and stops); SIGKILL to those
        still running ``STOP_GRACE_S`` later."""
        workers = [slot.process for slot in self.slots if slot.process is not None]
        for worker in workers:
            if worker.is_alive():
                worker.terminate()
        deadline = time.monotonic() + STOP_GRACE_S
        for worker in workers:
            worker.join(max(0.0, deadline - time.monotonic()))
            if worker.is_alive():
                worker.kill()
                worker.join()
        shutil.rmtree(self.directory, ignore_errors=True)


def serve_workers(config: Config, count: int) -> int:
    """Serves the configuration's port with ``count`` workers until SIGINT/SIGTERM: 0 then, 1 at
    once if they do not all start listening."""
    settings = config.server
    sock = bind(settings.host, settings.port)  # holds the port (0: picks one) without listening
    try:
        directory = socket_directory(count)
    except SocketDirectoryError as error:
        sock.close()
        log.error("%s", error)
        return 1
    pool = Pool(config, sock.getsockname()[1], count, directory)
    try:
        return _serve(pool, sock)
    finally:
        pool.stop()  # (every worker stopped, the socket directory removed, whatever happened)
        sock.close()


def _serve(pool: Pool, sock: socket.socket) -> int:
    """Starts ``pool``'s workers and watches them until SIGINT/SIGTERM; the exit status."""
    port, count = pool.port, len(pool.slots)
    stopping = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    for slot in pool.slots:
        pool.start(slot)

    def reload(signum: int, frame: FrameType | None) -> None:
        # each node reloads [auth] from the file itself (docs/protocol.md, Reloading entitlements)
        for slot in pool.slots:
            if slot.process is not None and slot.process.is_alive() and slot.process.pid is not None:
                os.kill(slot.process.pid, signal.SIGHUP)

    signal.signal(signal.SIGHUP, reload)
    deadline = time.monotonic() + START_TIMEOUT_S
    while not stopping and not pool.listening() and not pool.dead() and time.monotonic() < deadline:
        time.sleep(0.05)
    status = 0
    if pool.listening():
        for slot in pool.slots:
            slot.seen = True
        log.info("listening on http://%s:%d (%d workers)", sock.getsockname()[0], port, count)
    elif not stopping:
        dead = pool.dead()
        if dead is not None and dead.process is not None:
            worker = f"worker {dead.index} (pid {dead.process.pid}) {ended(dead.process.exitcode)}"
            log.error("%s before it accepted connections (see its output above); stopping", worker)
        else:
            log.error("not every worker listened on port %d within %g s; stopping", port, START_TIMEOUT_S)
        stopping, status = True, 1
    while not stopping:
        pool.watch(WATCH_S)
    return status
