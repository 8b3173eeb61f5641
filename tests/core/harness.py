"""A recording harness for the engine: feed commands to sessions, read back what each was sent."""

from __future__ import annotations

from typing import Any

import orjson

from server.core.broker.broker import LogFactory
from server.core.engine import Engine
from server.core.handlers import replaying
from server.core.log.local import LocalLog
from server.core.session.session import Session, SessionPort
from server.core.settings.config import Config, parse_config
from server.core.sow.txlog import LogEntry, entries_in, scan

DEFAULT_TOPICS = [
    {"name": "orders", "key": ["/order"]},
    {"name": "trades", "key": ["/buyer/id", "/id"]},
]


class FakeClock:
    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class QuietPort:
    """A socket as a test reads it: nothing written until the test takes it (``Peer.take``)."""

    def wake(self) -> None:
        pass

    def try_write(self) -> None:
        pass


QUIET = QuietPort()


class Peer:
    """One client: ``send`` feeds the engine, ``take`` returns the messages queued since the last take."""

    def __init__(self, engine: Engine, session: Session) -> None:
        self.engine = engine
        self.session = session

    def send(self, *commands: dict[str, Any]) -> list[dict[str, Any]]:
        frame = commands[0] if len(commands) == 1 else list(commands)
        self.engine.receive(self.session, orjson.dumps(frame))
        return self.take()

    def take(self) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = []
        while (frame := self.session.outbox.take_frame(1 << 20)) is not None:
            messages.extend(orjson.loads(frame))
        return messages


class Harness:
    def __init__(
        self, topics: list[dict[str, Any]] | None = None, log: LogFactory = LocalLog, **sections: Any
    ) -> None:
        """``log``: the change log the engine is built with (a server alone's, unless a test says)."""
        document: dict[str, Any] = {"topic": topics if topics is not None else DEFAULT_TOPICS, **sections}
        self.config: Config = parse_config(document)
        self.clock = FakeClock()
        self.engine = Engine(self.config, self.clock, log)
        self.broker = self.engine.broker

    def peer(self, address: str | None = None, port: SessionPort = QUIET) -> Peer:
        """A new client; ``address`` is its remote address (what logon throttling counts by),
        ``port`` what the core asks of its socket."""
        return Peer(self.engine, self.broker.open_session(port, address))


def publish(order: int, **fields: Any) -> dict[str, Any]:
    """A publish of order ``order`` to the ``orders`` topic."""
    return {"c": "publish", "t": "orders", "data": {"order": order, **fields}}


def order(number: int, customer: str, **fields: Any) -> dict[str, Any]:
    """A publish of order ``number`` of ``customer`` to the ``orders`` topic."""
    return {"c": "publish", "t": "orders", "data": {"order": number, "customer": customer, **fields}}


def logged_on(h: Harness, user_id: str, password: str = "pw") -> Peer:
    """A new client of ``h`` logged on as ``user_id``."""
    peer = h.peer()
    assert acks(peer.send({"c": "logon", "cid": "l", "user_id": user_id, "pw": password})) == [
        ("processed", "success")
    ]
    return peer


def of_type(messages: list[dict[str, Any]], c: str) -> list[dict[str, Any]]:
    return [m for m in messages if m["c"] == c]


def acks(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(m["a"], m["status"]) for m in messages if m["c"] == "ack"]


def entries_of(h: Harness) -> list[LogEntry]:
    """The log entries the engine appended since the last call (what the log writer would write)."""
    taken = h.broker.durability.take()
    return [] if taken is None else [LogEntry.from_payload(p) for p in entries_in(scan(taken[0]).payloads)]


def replay_all(h: Harness, log: list[LogEntry]) -> None:
    """What the runtime does for every bookmark replay requested: read ``log`` back, then go live."""
    while h.broker.replays:
        request = h.broker.replays.popleft()
        mark = request.bookmark
        chosen = [
            e
            for e in log
            if mark.after_lsn < e.lsn <= request.until_lsn
            and (mark.since is None or e.timestamp >= mark.since)
        ]
        replaying.replay(h.broker, request, chosen)
        replaying.finish(h.broker, request)
