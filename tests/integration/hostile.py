"""Measuring what a hostile client does to everyone else (tests/integration/test_hostile.py).

``VictimProbe`` is an innocent client on its own thread (so the attacking code in the test's event
loop cannot delay it): a victim socket holds a live subscription, and a publisher socket publishes
to it every ``interval``; the probe records how long each publish takes to reach the victim, and
whether either socket was closed. ``rss_mb`` / ``peak_rss_mb`` read the server process's memory.

What a round trip is held to does not depend on how busy the machine is (tests/README.md): from
its wall time the probe takes away the time the server's event loop and the probe's own thread
spent runnable but waiting for a core (the kernel counts it: ``/proc/<pid>/schedstat``). On an
idle machine that is nothing; with both cores taken by other work, it is what they took. What is
left is the time the server kept the victim waiting: its own work (a step too long) or its own
blocking (a connection it never reads), which is what an attack must not cause.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from ..waiting import HANG_S
from ..work import CoreWaits
from .server_process import ServerProcess

PROBE_TOPIC = "probe"


def _status_kb(pid: int, name: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(name + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {name} for process {pid}")


def rss_mb(server: ServerProcess) -> float:
    """The server's resident memory now (VmRSS), in MB."""
    return _status_kb(server.process.pid, "VmRSS") / 1024


def peak_rss_mb(server: ServerProcess) -> float:
    """The most the server has ever been resident (VmHWM), in MB."""
    return _status_kb(server.process.pid, "VmHWM") / 1024


def settled_rss_mb(server: ServerProcess, below: float, timeout: float = HANG_S) -> float:
    """The server's RSS once it is under ``below`` MB, or what it is after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        now = rss_mb(server)
        if now < below or time.monotonic() > deadline:
            return now
        time.sleep(0.2)


def dir_bytes(path: Path) -> int:
    return sum(item.stat().st_size for item in path.rglob("*") if item.is_file()) if path.exists() else 0


def stored(server: ServerProcess, topic: str, logon: dict[str, Any] | None = None) -> list[bytes]:
    """Every record of ``topic`` (read by a ``sow``, after ``logon`` when given), in a comparable form."""
    with connect(server.url, open_timeout=HANG_S, max_size=None, ping_interval=None) as ws:
        if logon is not None:
            assert all(m.get("status") != "failure" for m in request(ws, {**logon, "cid": "logon"}))
        replies = request(ws, {"c": "sow", "t": topic, "cid": "stored"})
        ack = next(m for m in replies if m.get("cid") == "stored" and m.get("a") == "processed")
        assert ack["status"] == "success", ack
        records = [m["data"] for m in replies if m.get("c") == "sow"]
        while not any(m.get("c") == "group_end" for m in replies):
            replies = _messages(ws.recv(timeout=HANG_S))
            records += [m["data"] for m in replies if m.get("c") == "sow"]
    return sorted(orjson.dumps(record, option=orjson.OPT_SORT_KEYS) for record in records)


def _messages(frame: str | bytes) -> list[dict[str, Any]]:
    decoded = orjson.loads(frame)
    return decoded if isinstance(decoded, list) else [decoded]


def request(ws: ClientConnection, command: dict[str, Any], timeout: float = HANG_S) -> list[dict[str, Any]]:
    """Send ``command`` (with a ``cid``) and read up to the frame that holds its processed ack (all of it)."""
    ws.send(orjson.dumps(command).decode())
    seen: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while True:
        messages = _messages(ws.recv(timeout=max(0.01, deadline - time.monotonic())))
        seen.extend(messages)
        for message in messages:
            if (
                message.get("c") == "ack"
                and message.get("cid") == command["cid"]
                and message["a"] == "processed"
            ):
                return seen


@dataclass
class ProbeResult:
    latencies: list[float] = field(default_factory=list)  # each round trip's wall time
    arrivals: list[float] = field(default_factory=list)  # when each round trip completed (monotonic)
    # What the machine took: for each round trip, the time the server's loop and the probe's thread
    # waited for a core during it; for each arrival, the total so far.
    busy: list[float] = field(default_factory=list)
    busy_at: list[float] = field(default_factory=list)
    stalls: int = 0  # publishes that had not arrived within the probe's timeout
    errors: list[str] = field(default_factory=list)
    interval: float = 0.0

    @property
    def waits(self) -> list[float]:
        """Each round trip less what other work on the machine took from it."""
        return [max(0.0, wall - busy) for wall, busy in zip(self.latencies, self.busy, strict=True)]

    @property
    def worst(self) -> float:
        """The slowest round trip, or the longest time without one (less the probe's own pause),
        each less the time the machine's other work took from the server and the probe."""
        gaps = [
            b - a - self.interval - (busy_b - busy_a)
            for a, b, busy_a, busy_b in zip(
                self.arrivals, self.arrivals[1:], self.busy_at, self.busy_at[1:], strict=False
            )
        ]
        return max([*self.waits, *gaps], default=float("inf"))

    def assert_healthy(self, limit_s: float, what: str) -> None:
        """The victim stayed connected and every publish reached it within ``limit_s``."""
        assert not self.errors, f"{what}: the victim was hurt: {self.errors}"
        assert len(self.latencies) >= 3, f"{what}: the probe measured only {len(self.latencies)} round trips"
        assert not self.stalls, f"{what}: {self.stalls} publishes never reached the victim"
        slow = sorted(self.waits)[-3:]
        assert self.worst < limit_s, (
            f"{what}: the victim waited {self.worst:.2f} s for a publish, besides what other work "
            f"on the machine took (slowest round trips {[round(s, 2) for s in slow]}, of wall time up "
            f"to {max(self.latencies):.2f} s; {len(self.latencies)} samples)"
        )


class VictimProbe:
    """An innocent subscriber and publisher on their own thread; see the module docstring.

    ``logon`` is the logon command (without ``cid``) both sockets send first when the server has
    ``[auth]``.
    """

    def __init__(
        self,
        server: ServerProcess,
        interval: float = 0.05,
        timeout: float = HANG_S,
        logon: dict[str, Any] | None = None,
    ) -> None:
        self.server = server
        self.interval = interval
        self.timeout = timeout
        self.logon = logon
        self.result = ProbeResult(interval=interval)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="victim-probe", daemon=True)
        self._ready = threading.Event()
        self._victim: ClientConnection | None = None
        self._publisher: ClientConnection | None = None
        self._sockets = contextlib.ExitStack()

    def __enter__(self) -> VictimProbe:
        self._victim = self._open("victim")
        replies = request(self._victim, {"c": "sow_and_subscribe", "t": PROBE_TOPIC, "cid": "live"})
        assert all(m.get("status") != "failure" for m in replies), replies
        self._publisher = self._open("publisher")
        self._thread.start()
        if not self._ready.wait(HANG_S):
            raise AssertionError("the probe's first round trip did not complete")
        return self

    def _open(self, name: str) -> ClientConnection:
        ws = self._sockets.enter_context(
            connect(self.server.url, open_timeout=HANG_S, max_size=None, ping_interval=None)
        )
        if self.logon is not None:
            replies = request(ws, {**self.logon, "cid": f"logon-{name}"})
            assert all(m.get("status") != "failure" for m in replies), replies
        return ws

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> ProbeResult:
        """Stop after one more round trip (the victim must still be served after the attack)."""
        if self._thread.is_alive():
            mark = len(self.result.latencies) + len(self.result.errors) + self.result.stalls
            deadline = time.monotonic() + self.timeout + 1
            mark = max(mark, 2)  # and at least three round trips in all
            while (
                len(self.result.latencies) + len(self.result.errors) + self.result.stalls <= mark
                and time.monotonic() < deadline
                and self._thread.is_alive()
            ):
                time.sleep(0.02)
            self._stop.set()
            self._thread.join(self.timeout + 5)
        self._sockets.close()
        return self.result

    def _run(self) -> None:
        assert self._victim is not None and self._publisher is not None
        victim, publisher = self._victim, self._publisher
        cores = CoreWaits(self.server.process.pid)
        number = 0
        try:
            while not self._stop.is_set():
                number += 1
                busy = cores.now()
                sent = time.monotonic()
                publisher.send(
                    orjson.dumps({"c": "publish", "t": PROBE_TOPIC, "data": {"id": 1, "n": number}})
                )
                if self._await(victim, number, sent):
                    arrived = time.monotonic()
                    busy_now = cores.now()
                    self.result.latencies.append(arrived - sent)
                    self.result.busy.append(busy_now - busy)
                    self.result.arrivals.append(arrived)
                    self.result.busy_at.append(busy_now)
                    self._ready.set()
                time.sleep(self.interval)
        except ConnectionClosed as error:
            self.result.errors.append(f"closed: {error.rcvd.code if error.rcvd else 'without a close frame'}")
        except Exception as error:
            self.result.errors.append(f"{type(error).__name__}: {error}")
        finally:
            self._ready.set()

    def _await(self, victim: ClientConnection, number: int, sent: float) -> bool:
        while True:
            left = sent + self.timeout - time.monotonic()
            if left <= 0:
                self.result.stalls += 1
                return False
            try:
                frame = victim.recv(timeout=left)
            except TimeoutError:
                continue
            for message in _messages(frame):
                if message.get("c") == "p" and message.get("data", {}).get("n", 0) >= number:
                    return True


def eventually(condition: Callable[[], bool], timeout: float, step: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)
    return condition()
