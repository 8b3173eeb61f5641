"""What one server that applied a cluster's shared log would have sent each subscriber, and what
each subscriber did receive (the cluster model test: test_cluster_model.py, cluster_model.py)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import jsonpatch

from ..core.engine_model import Filter, Record
from .cluster_model import ClusterViolation, Events, Log, MessageViolation


def expected_messages(
    log: Log, position: int, filter_: Filter, delta: bool
) -> tuple[dict[int, Record], Events]:
    """What a ``sow_and_subscribe`` (``delta``: ``sow_and_delta_subscribe``) with ``oof`` and
    ``filter_`` gets from a server that takes its snapshot after the first ``position`` changes of
    the log and then applies the rest: the snapshot, and per record its messages (docs/protocol.md,
    Delta subscriptions and OOF)."""
    held = {key: record for key, record in log.states[position].items() if filter_.matches(record)}
    snapshot = dict(held)
    events: Events = defaultdict(list)
    for change in log.changes[position:]:
        key, new = change.id, change.state
        if new is not None and filter_.matches(new):
            events[key].append(("p", "patch" if delta and key in held else "data", new))
            held[key] = new
        elif key in held:
            if change.op == "p":
                events[key].append(("oof", "match", new))  # type: ignore[arg-type]
            else:
                events[key].append(("oof", "deleted" if change.op == "d" else "expired", held[key]))
            del held[key]
    return snapshot, dict(events)


@dataclass
class Received:
    """What one subscription's socket was sent, rebuilt only from its messages."""

    acked: bool = False
    snapshot: dict[int, Record] | None = None  # None until group_end
    events: Events = field(default_factory=dict)
    view: dict[int, Record] = field(default_factory=dict)


def received(messages: list[dict[str, Any]], sid: str, cid: str) -> Received:
    """Parse one subscriber socket's messages (one ``sow_and_*`` subscription with ``oof``): its
    processed ack, then group_begin, the snapshot, group_end, then ``p`` and ``oof`` messages;
    patches are applied to the record held. Anything else, or out of its place, is a violation."""
    got = Received()
    keys: dict[str, int] = {}  # SowKey -> record id
    snapshot: dict[int, Record] | None = None
    events: Events = defaultdict(list)

    def fail(what: str, message: dict[str, Any]) -> ClusterViolation:
        return MessageViolation(f"subscriber {sid}: {what}: {message}")

    def identify(message: dict[str, Any], record: Any) -> int:
        k = message.get("k")
        if not isinstance(k, str):
            raise fail("no k", message)
        if isinstance(record, dict) and "id" in record and keys.setdefault(k, record["id"]) != record["id"]:
            raise fail(f"k {k} names records {keys[k]} and {record['id']}", message)
        if k not in keys:
            raise fail("a record never sent in full", message)
        return keys[k]

    for message in messages:
        c = message.get("c")
        if c == "ack":
            if got.acked or message.get("cid") != cid or message.get("a") != "processed":
                raise fail("an unexpected ack", message)
            if message.get("status") != "success":
                raise fail("the subscription failed", message)
            got.acked = True
        elif not got.acked:
            raise fail("a message before the subscription's processed ack", message)
        elif c == "group_begin":
            if snapshot is not None or got.snapshot is not None or message.get("query_id") != sid:
                raise fail("an unexpected group_begin", message)
            snapshot = {}
        elif c == "sow":
            if snapshot is None or message.get("query_id") != sid:
                raise fail("a sow record outside the snapshot", message)
            record = message.get("data")
            snapshot[identify(message, record)] = record
        elif c == "group_end":
            if snapshot is None or message.get("records") != len(snapshot) or message.get("query_id") != sid:
                raise fail(
                    f"an unexpected group_end ({0 if snapshot is None else len(snapshot)} sent)", message
                )
            got.snapshot, snapshot = snapshot, None
            got.view = dict(got.snapshot)
        elif c in ("p", "oof"):
            if got.snapshot is None:
                raise fail("a live message before group_end", message)
            if message.get("sids") != [sid] or message.get("t") is None:
                raise fail("a message with wrong sids", message)
            if c == "oof":
                record = message.get("data")
                key = identify(message, record)
                if key not in got.view:
                    raise fail("an OOF of a record not held", message)
                events[key].append(("oof", message.get("reason"), record))
                del got.view[key]
            elif "data" in message:
                record = message["data"]
                key = identify(message, record)
                events[key].append(("p", "data", record))
                got.view[key] = record
            elif "patch" in message:
                key = identify(message, None)
                if key not in got.view:
                    raise fail("a patch of a record not held", message)
                try:
                    record = jsonpatch.apply_patch(got.view[key], message["patch"])
                except jsonpatch.JsonPatchException as error:
                    raise fail(f"a patch that does not apply to {got.view[key]} ({error})", message) from None
                events[key].append(("p", "patch", record))
                got.view[key] = record
            else:
                raise fail("a p message without data or patch", message)
        else:
            raise fail("an unexpected message", message)
    got.events = dict(events)
    return got


def matches_for(
    log: Log, got: Received, filter_: Filter, delta: bool, complete: bool
) -> tuple[int | None, str]:
    """A log position at which a single server's snapshot and messages are ``got``'s (all of them
    when ``complete``; otherwise each record's messages so far begin them), and if there is none,
    the nearest miss, described."""
    assert got.snapshot is not None
    best: tuple[int, str] = (-1, "no position of the log has this snapshot")
    for position, state in enumerate(log.states):
        if {key: record for key, record in state.items() if filter_.matches(record)} != got.snapshot:
            continue
        _, expected = expected_messages(log, position, filter_, delta)
        ok, agreed, difference = True, 0, ""
        for key in sorted(set(expected) | set(got.events)):
            want, have = expected.get(key, []), got.events.get(key, [])
            same = 0
            while same < min(len(want), len(have)) and want[same] == have[same]:
                same += 1
            agreed += same
            if (have != want) if complete else (have != want[: len(have)]):
                ok = False
                difference = difference or (
                    f"record {key}: after {same} messages alike, got {have[same:]}, expected {want[same:]}"
                )
        if ok:
            return position, ""
        if agreed > best[0]:
            best = (agreed, f"with the snapshot taken after log entry #{position - 1}: {difference}")
    return None, best[1]
