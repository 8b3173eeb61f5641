"""The frames target: an engine fed hostile frames, checked for acks, SOW changes and observers."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import jsonpatch
import orjson

from tests.core.harness import Harness, Peer
from tests.fuzzing.frames import (
    ATTACKER,
    FEED,
    FUZZ_AUTH,
    SEED_FRAMES,
    SOW_TOPICS,
    WATCHER,
    Flood,
    Tick,
    flood_count,
    frame_bytes,
)
from tests.fuzzing.values import encode

# Reasons a failure ack may start with (docs/protocol.md, Errors, plus `name in use` of 6.4).
REASONS = (
    "bad filter",
    "invalid topic",
    "invalid options",
    "invalid order by",
    "not entitled",
    "auth failure",
    "logon required",
    "subid in use",
    "no topic",
    "bad message",
    "unavailable",
    "name in use",
)
WRITE_COMMANDS = frozenset({"publish", "delta_publish", "sow_delete", "tx"})
FUZZ_TOPICS: list[dict[str, Any]] = [
    {"name": "orders", "key": ["/order"]},
    {"name": "trades", "key": ["/buyer/id", "/id"]},
    {"name": "ledger", "key": ["/id"], "durable": True, "expiration": "30s", "conflation": "always"},
]


class _Captured(logging.Handler):
    """Records every log entry that carries an exception: a command that failed unexpectedly."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.failures: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info or record.levelno >= logging.ERROR:
            summary = record.getMessage()[:300]
            if record.exc_info and record.exc_info[1] is not None:
                error = record.exc_info[1]
                summary += f"\n    {type(error).__name__}: {str(error)[:300]}"
                tb = error.__traceback__
                while tb is not None and tb.tb_next is not None:
                    tb = tb.tb_next
                if tb is not None:
                    code = tb.tb_frame.f_code
                    summary += f"\n    raised at {code.co_filename}:{tb.tb_lineno} in {code.co_name}"
            self.failures.append(summary)


@contextmanager
def captured_failures() -> Iterator[_Captured]:
    handler = _Captured()
    logger = logging.getLogger("server")
    logger.addHandler(handler)
    previous = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)


def _json(frame: bytes | str) -> Any:
    """The frame's JSON value as the protocol reads it: orjson, or the standard library when
    orjson refused only a number past the largest double (that number's command is refused, not
    the frame). ValueError when it is not JSON."""
    try:
        return orjson.loads(frame)
    except orjson.JSONDecodeError as error:
        if "infinity when parsed as double" not in str(error):
            raise
        try:
            return json.loads(frame)
        except RecursionError:
            raise ValueError("nested too deeply") from None


def _valid_cid(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _freeze(value: Any) -> Any:
    """A hashable form of a cid (1 and "1" stay distinct)."""
    return (type(value).__name__, value)


@dataclass
class _View:
    """What an observer's subscription holds: SowKey -> record."""

    records: dict[str, Any] = field(default_factory=dict)


class EngineRig:
    """An engine with three SOW topics, an attacker socket and two observer sockets.

    ``step`` feeds one hostile frame (or clock tick) from the attacker and checks every property;
    it raises ``AssertionError`` naming the broken one.
    """

    def __init__(self, slow_s: float = 5.0, auth: bool = False) -> None:
        sections: dict[str, Any] = {"auth": FUZZ_AUTH} if auth else {}
        self.harness = Harness(FUZZ_TOPICS, **sections)
        self.engine = self.harness.engine
        self.slow_s = slow_s
        self.auth = auth
        self.attacker = self._connect(ATTACKER)
        self.full_observer = self._connect(WATCHER)
        self.delta_observer = self._connect(WATCHER)
        feed = self._connect(FEED)
        for message in (
            self.full_observer.send({"c": "sow_and_subscribe", "t": "orders", "cid": "full", "o": "oof"})
            + self.delta_observer.send(
                {"c": "sow_and_delta_subscribe", "t": "orders", "cid": "delta", "o": "oof"}
            )
            + feed.send(*SEED_FRAMES)
        ):
            if message.get("c") == "ack":
                assert message.get("status") == "success", f"setting up the rig failed: {message}"
        self.engine.broker.close_session(feed.session)
        self.views = {"full": _View(), "delta": _View()}
        self._observe()

    def _connect(self, logon: dict[str, Any]) -> Peer:
        """A new socket; with ``[auth]``, logged on with ``logon``."""
        peer = self.harness.peer()
        if self.auth:
            replies = peer.send({**logon, "cid": "logon"})
            assert replies and replies[-1]["status"] == "success", f"logon failed: {replies}"
        return peer

    # -- state ---------------------------------------------------------------------------------

    def stored(self) -> tuple[dict[str, dict[str, Any]], dict[str, int]]:
        """The SOW of every topic (record versions are immutable: identity is enough) and the
        publisher sequences."""
        sow = {name: dict(self.engine.broker.topics[name].records) for name in SOW_TOPICS}
        return sow, dict(self.engine.broker.sequences)

    def _sow_data(self, topic: str) -> dict[str, Any]:
        return {key: version.data for key, version in self.engine.broker.topics[topic].records.items()}

    # -- one step --------------------------------------------------------------------------------

    def step(self, step: Any) -> None:
        if isinstance(step, Tick):
            self.harness.clock.now += step.seconds
            with captured_failures() as failures:
                self.engine.broker.advance(self.harness.clock.now)
            assert not failures.failures, "advance() failed unexpectedly:\n" + "\n".join(failures.failures)
            # What the tick sent the attacker (an expiry pulling a record into its window, say) is
            # read now: the next frame's checks are about that frame's messages alone.
            self._take(self.attacker)
            self._observe()
            return
        frame = frame_bytes(step)
        if self.attacker.session.close_code is not None:
            self.engine.broker.close_session(
                self.attacker.session
            )  # the runtime would; the client reconnects
            self.attacker = self._connect(ATTACKER)
        before = self.stored()
        started = time.thread_time()  # its own work, whatever else runs (tests/work.py)
        with captured_failures() as failures:
            try:
                self.engine.receive(self.attacker.session, frame)
            except Exception as error:
                raise AssertionError(f"Engine.receive raised {type(error).__name__}: {error}") from error
            messages = self._take(self.attacker)
        elapsed = time.thread_time() - started
        assert not failures.failures, "a command failed unexpectedly in the engine:\n" + "\n".join(
            failures.failures
        )
        per_command = elapsed / max(1, len(step) if isinstance(step, list) else 1)
        if isinstance(step, Flood):
            per_command = elapsed / flood_count(step, encode(step.command))
        assert per_command < self.slow_s, f"one command took {per_command:.1f} s to process"
        self._check_acks(frame, messages, before)
        self._observe()

    def _take(self, peer: Peer) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = []
        while (frame := peer.session.outbox.take_frame(1 << 20)) is not None:
            try:
                decoded = orjson.loads(frame)
            except orjson.JSONDecodeError as error:
                raise AssertionError(
                    f"the server queued a frame that is not JSON: {frame[:200]!r}"
                ) from error
            assert isinstance(decoded, list), f"an outbound frame is not an array: {frame[:200]!r}"
            for message in decoded:
                assert isinstance(message, dict) and isinstance(message.get("c"), str), (
                    f"an outbound message without c: {message!r:.200}"
                )
            messages.extend(decoded)
        return messages

    def _check_acks(self, frame: bytes | str, messages: list[dict[str, Any]], before: Any) -> None:
        for message in messages:
            if message["c"] == "ack":
                assert message.get("status") in ("success", "failure"), f"ack without a status: {message}"
                if message["status"] == "failure":
                    reason = message.get("reason")
                    assert isinstance(reason, str) and reason.startswith(REASONS), (
                        f"failure reason is not a protocol word: {reason!r:.200}"
                    )
                    assert message.get("a") == "processed", f"a failure ack that is not processed: {message}"
        try:
            decoded = _json(frame)
        except ValueError:
            acks = [m for m in messages if m["c"] == "ack"]
            assert len(messages) == 1 and len(acks) == 1, f"a frame that is not JSON got {messages!r:.300}"
            assert acks[0]["status"] == "failure" and acks[0]["reason"].startswith("bad message")
            assert self.stored() == before, "a frame that is not JSON changed the SOW"
            return
        commands_in = decoded if isinstance(decoded, list) else [decoded]
        closed = self.attacker.session.close_code is not None
        counts: dict[Any, int] = {}
        for raw in commands_in:
            if isinstance(raw, dict) and _valid_cid(raw.get("cid")):
                counts[_freeze(raw["cid"])] = counts.get(_freeze(raw["cid"]), 0) + 1
        unique = {cid for cid, n in counts.items() if n == 1}
        processed: dict[Any, list[dict[str, Any]]] = {}
        every_ack: dict[Any, list[dict[str, Any]]] = {}
        for message in messages:
            if message["c"] == "ack" and _valid_cid(message.get("cid")):
                cid = _freeze(message["cid"])
                every_ack.setdefault(cid, []).append(message)
                if message["a"] == "processed":
                    processed.setdefault(cid, []).append(message)
        for cid in unique:
            got = processed.get(cid, [])
            if closed:
                assert len(got) <= 1, f"command cid={cid[1]!r:.80} got {len(got)} processed acks"
            else:
                assert len(got) == 1, (
                    f"command cid={cid[1]!r:.80} got {len(got)} processed acks: {got!r:.300}"
                )
            if got and got[0]["status"] == "failure":
                others = [m for m in every_ack.get(cid, []) if m is not got[0]]
                assert not others, f"a failed command (cid={cid[1]!r:.80}) got more acks: {others!r:.300}"
        non_objects = sum(not isinstance(raw, dict) for raw in commands_in)
        cidless_failures = sum(
            1 for m in messages if m["c"] == "ack" and m.get("cid") is None and m["status"] == "failure"
        )
        if not closed:
            assert cidless_failures >= non_objects, (
                f"{non_objects} elements are not commands but only {cidless_failures} failure acks came"
            )
        # Which writes may have changed the SOW: those not known to have been refused.
        may_write = False
        for raw in commands_in:
            if (
                not isinstance(raw, dict)
                or not isinstance(raw.get("c"), str)
                or raw["c"] not in WRITE_COMMANDS
            ):
                continue
            cid = _freeze(raw.get("cid")) if _valid_cid(raw.get("cid")) else None
            if cid is None or cid not in unique or not processed.get(cid):
                may_write = True
                continue
            ack = processed[cid][0]
            if ack["status"] == "success" and ack.get("reason") != "duplicate":
                may_write = True
        if not may_write:
            after = self.stored()
            assert after[0] == before[0], (
                f"refused or read-only commands changed the SOW: {self._sow_diff(before[0], after[0])}"
            )
            assert after[1] == before[1], (
                f"refused commands moved publisher sequences: {before[1]} -> {after[1]}"
            )

    def _sow_diff(self, before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]) -> str:
        changes = []
        for topic in SOW_TOPICS:
            for key in set(before[topic]) | set(after[topic]):
                old, new = before[topic].get(key), after[topic].get(key)
                if old is not new:
                    was, now = getattr(old, "data", None), getattr(new, "data", None)
                    changes.append(f"{topic}/{key}: {was!r:.80} -> {now!r:.80}")
        return "; ".join(changes[:5])

    # -- observers -------------------------------------------------------------------------------

    def _observe(self) -> None:
        """Both observers' views, updated from what they were sent, equal the ``orders`` SOW."""
        for name, peer in (("full", self.full_observer), ("delta", self.delta_observer)):
            messages = self._take(peer)
            if peer.session.close_code is not None:
                continue  # closed for back pressure: nothing more to check
            view = self.views[name].records
            for message in messages:
                c = message["c"]
                if c in ("sow", "p"):
                    key = message.get("k")
                    assert isinstance(key, str), f"{name} observer: a {c} message without k: {message!r:.200}"
                    if "data" in message:
                        view[key] = message["data"]
                    elif "patch" in message:
                        assert key in view, f"delta observer: a patch for a record it never had: {key}"
                        try:
                            view[key] = jsonpatch.apply_patch(view[key], message["patch"])
                        except jsonpatch.JsonPatchException as error:
                            raise AssertionError(f"a patch that does not apply: {message!r:.300}") from error
                    else:
                        raise AssertionError(
                            f"{name} observer: a {c} message without a body: {message!r:.200}"
                        )
                elif c == "oof":
                    view.pop(str(message.get("k")), None)
            sow = self._sow_data("orders")
            if view != sow:
                missing = sorted(set(sow) - set(view))[:3]
                extra = sorted(set(view) - set(sow))[:3]
                wrong = [k for k in set(sow) & set(view) if sow[k] != view[k]][:3]
                raise AssertionError(
                    f"the {name} observer's view differs from the SOW: missing {missing}, extra {extra}, "
                    f"different {[(k, view[k], sow[k]) for k in wrong]!r:.400}"
                )


def check_frames(steps: list[Any], slow_s: float = 5.0, auth: bool = False) -> None:
    rig = EngineRig(slow_s, auth)
    for step in steps:
        rig.step(step)
