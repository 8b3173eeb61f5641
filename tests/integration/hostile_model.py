"""The hostile model against a real server: volleys of extreme commands (tests/fuzzing/extremes.py)
from one attacking socket at a time, while a ``VictimProbe`` measures an innocent socket's round
trip, and the server's memory is read after every volley.

``run_model`` returns what it found (``Finding``s): a victim round trip past ``latency_s``, growth
past ``growth_mb``, the server gone, or a stored topic the attacker never wrote changed. The short
form runs in the suite (tests/integration/test_hostile_model.py); bench/fuzz.py runs it for
longer with other seeds.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from tests.fuzzing.extremes import Volley, volleys

from ..waiting import HANG_S
from .hostile import VictimProbe, peak_rss_mb, rss_mb, stored
from .hostile_arena import ORDERS, TOPICS, publish_all
from .server_process import ServerProcess, write_config

BIG_TOPIC, DURABLE_TOPIC = "big", "ledger"
BIG_RECORDS = 20_000
SETTLE_S = 0.15  # after a volley, for what it queued to be worked through


@dataclass
class Finding:
    volley: Volley
    what: str


@dataclass
class ModelReport:
    volleys: int = 0
    findings: list[Finding] = field(default_factory=list)
    worst_round_trip_s: float = 0.0
    peak_growth_mb: float = 0.0

    def summary(self) -> str:
        lines = [
            f"{self.volleys} volleys, "
            f"worst victim round trip {self.worst_round_trip_s:.2f} s, "
            f"peak growth {self.peak_growth_mb:.0f} MB"
        ]
        lines += [f"  FOUND {f.what}: {f.volley.label} (x{f.volley.per_frame})" for f in self.findings]
        return "\n".join(lines)


def big_rows(count: int) -> list[dict[str, Any]]:
    return [{"id": n, "qty": n % 97, "desk": f"d{n % 7}", "s": "ab" * 20} for n in range(count)]


def seeded_server(directory: Path) -> ServerProcess:
    """A server of the hostile tests' topics (hostile_arena.py) with ``orders`` and the big topic
    seeded, for a run outside pytest (bench/fuzz.py); stop it when done."""
    server = ServerProcess(write_config(directory / "server.toml", {}, TOPICS), directory / "data")
    publish_all(server, "orders", ORDERS)
    publish_all(server, BIG_TOPIC, big_rows(BIG_RECORDS))
    return server


class Attacker:
    """One socket, reopened when the server closes it (a closed attacker simply comes back)."""

    def __init__(self, server: ServerProcess) -> None:
        self.server = server
        self.ws: ClientConnection | None = None
        self._opened = contextlib.ExitStack()
        self.cids = 0

    def send(self, volley: Volley) -> None:
        for _ in range(volley.frames):
            frame = []
            for _ in range(volley.per_frame):
                self.cids += 1
                frame.append({**volley.command, "cid": self.cids})
            try:
                self._socket().send(orjson.dumps(frame))
            except (ConnectionClosed, OSError, orjson.JSONEncodeError):
                self.close()
                return
        if volley.reads:
            self.drain(SETTLE_S)

    def drain(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        with contextlib.suppress(ConnectionClosed, OSError, TimeoutError):
            while self.ws is not None and time.monotonic() < deadline:
                self.ws.recv(timeout=max(0.01, deadline - time.monotonic()))

    def _socket(self) -> ClientConnection:
        if self.ws is None:
            # No keepalive of its own: an attacker that never reads must not be cut by its library.
            # Closing waits 0.5 s (not the library's 10) for the server's close frame: after a volley
            # whose replies the attacker never read, that frame is stuck behind them and never comes
            # (the server has long worked through the volley); the connection is then dropped. On
            # loopback a close frame that can come does so in milliseconds: a longer wait only idles
            # (with 2 s, the closes took a third of the test's time).
            opened = connect(
                self.server.url, open_timeout=HANG_S, close_timeout=0.5, max_size=None, ping_interval=None
            )
            self.ws = self._opened.enter_context(opened)
        return self.ws

    def close(self) -> None:
        if self.ws is not None:
            with contextlib.suppress(Exception):
                self._opened.close()
            self.ws = None


def run_model(
    server: ServerProcess,
    seed: int,
    rounds: int,
    latency_s: float,
    growth_mb: float,
    progress: Callable[[str], None] | None = None,
) -> ModelReport:
    """Run ``rounds`` rounds of the volleys of ``seed`` against ``server`` (seeded with ``seed_server``)."""
    report = ModelReport()
    before = stored(server, "orders")
    start = rss_mb(server)
    attacker = Attacker(server)
    with VictimProbe(server, timeout=HANG_S) as probe:
        for volley in volleys(seed, rounds, (BIG_TOPIC, DURABLE_TOPIC)):
            seen = len(probe.result.latencies)
            attacker.send(volley)
            if not volley.reads:
                attacker.close()  # a socket that never read: closed, its queue must be freed
            time.sleep(SETTLE_S)
            report.volleys += 1
            worst = max(probe.result.latencies[seen:], default=0.0)
            report.worst_round_trip_s = max(report.worst_round_trip_s, worst)
            growth = peak_rss_mb(server) - start
            report.peak_growth_mb = max(report.peak_growth_mb, growth)
            if progress is not None:
                progress(f"{worst:5.2f} s {growth:5.0f} MB  {volley.label[:110]}")
            if worst > latency_s:
                report.findings.append(Finding(volley, f"victim waited {worst:.2f} s"))
            if growth > growth_mb:
                report.findings.append(Finding(volley, f"server grew {growth:.0f} MB"))
                start = peak_rss_mb(server)  # report each growth once
            if server.process.poll() is not None:
                report.findings.append(Finding(volley, "the server died"))
                return report
        attacker.close()
    errors = probe.result.errors
    if errors:
        report.findings.append(
            Finding(Volley("whole run", {}, 0, 0, False), f"the victim was hurt: {errors}")
        )
    if stored(server, "orders") != before:
        report.findings.append(Finding(Volley("whole run", {}, 0, 0, False), "orders changed"))
    return report
