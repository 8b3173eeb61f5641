"""Small fakes for the socket queue (server/core/queue), without an engine.

``FakeReader`` is what the queue needs of a subscription (queue/reader.py) and renders every body
so that a test reads like the merge table: ``FakeFeed`` makes the deliveries a topic's fan-out
would (the kind, base, view and body of each), and ``said`` turns what a client receives back
into short lines:

    p s a=2         record ``a`` in full, as 2 (an insert, or a final state sent whole)
    p s a:0>2       a delta of ``a`` from 0 to 2 (what ``composite_body`` was asked for)
    oof s a=2       ``a`` left the view of ``s``; the OOF carries 2
    p s,t a=2       one message for both (byte-identical, ``sids`` in subscription order)
    p s a=2 @7      a window's message, with the record's position in its own head

Records are small JSON values: an int, or an object written ``{kind:trade,n:1}``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import orjson

from server.core.filters.entitlement import UNRESTRICTED, Entitlement
from server.core.protocol.wire import OOF_COMMAND, P_COMMAND, body, head, record_body
from server.core.queue.delivery import (
    COUNTERS,
    FULL,
    INSERT,
    OOF,
    UPDATE,
    Delivery,
    QueuePolicy,
    RunBatch,
    TxBlock,
)
from server.core.queue.latency import TopicLatency
from server.core.queue.outbox import Outbox
from server.core.records.version import RecordVersion

_ORDER = itertools.count()


class FakeReader:
    """A subscription as the socket queue sees it. ``stateful``: it holds each record's view (a
    delta or OOF subscriber), so it is sent INSERT, UPDATE and OOF; otherwise FULL."""

    def __init__(
        self,
        sub_id: str,
        topic: str = "t",
        stateful: bool = True,
        positions: bool = False,
        entitlement: Entitlement = UNRESTRICTED,
    ) -> None:
        self.sub_id: Any = sub_id
        self.order = next(_ORDER)
        topic_json = orjson.dumps(topic)
        self.head_p = head(P_COMMAND, topic_json, [sub_id])
        self.head_oof = head(OOF_COMMAND, topic_json, [sub_id])
        self.dropped = False
        self.held: dict[str, Any] | None = {} if stateful else None
        self.entitlement = entitlement
        self.positions = positions
        self.successor: FakeReader | None = None
        self.count_queued: Any = None

    def message_head(self, command: bytes) -> bytes:
        return self.head_p if command == P_COMMAND else self.head_oof

    def replaced_by(self) -> FakeReader:
        """A ``replace`` of this subscription (the same view): the new one takes over its
        ``sub_id`` and a copy of what it holds, as ``replace`` does (handlers/querying.py)."""
        new = FakeReader(self.sub_id, stateful=self.held is not None, entitlement=self.entitlement)
        if self.held is not None and new.held is not None:
            new.held.update(self.held)
        self.successor = new
        return new

    def __repr__(self) -> str:
        return f"FakeReader({self.sub_id!r})"

    def view_of(self, version: RecordVersion) -> Any:
        return version.data

    def full_body(self, key: str | None, version: RecordVersion, view: Any, memo: dict[Any, Any]) -> bytes:
        return record_body(key, view)

    def body_of(self, key: str | None, version: RecordVersion) -> bytes:
        return record_body(key, version.data)

    def composite_body(self, key: str, base: Any, version: RecordVersion, view: Any) -> bytes:
        return body({"k": key, "from": base, "to": view})


def policy(
    conflation: str = "always",
    mode: str = "replace",
    merge: Callable[[Any, Any], Any] | None = None,
    match: Callable[[list[Any], Any], int | None] | None = None,
    name: str = "t",
) -> QueuePolicy:
    counters = dict.fromkeys(COUNTERS, 0)
    return QueuePolicy(name, orjson.dumps(name), conflation, mode, merge, match, counters, TopicLatency())


class FakeFeed:
    """Changes of one topic's records as its fan-out delivers them: each call makes the
    ``Delivery`` of one change for ``subs`` (one socket's subscriptions that are sent the same
    message), and keeps what each of them holds as the real subscription would: a delta is taken
    from ``held``, the very object (which the queue replaces when a merge decides the client will
    hold another state: ``Net.sends``), and ``held`` then names the delivery's view."""

    def __init__(self, queue: QueuePolicy) -> None:
        self.policy = queue
        self.seq = 0

    def version(self, key: str, data: Any) -> RecordVersion:
        self.seq += 1
        return RecordVersion(key, data, self.seq, float(self.seq))

    def change(self, kind: str, key: str, data: Any, *subs: FakeReader, pos: int | None = None) -> Delivery:
        first = subs[0]
        version = self.version(key, data)
        base: Any = None
        if kind == FULL:
            assert all(sub.held is None for sub in subs), "FULL goes to stateless subscriptions"
            encoded = first.full_body(key, version, data, {})
        else:
            helds = [sub.held for sub in subs]
            assert all(held is not None for held in helds), "INSERT, UPDATE, OOF go to stateful ones"
            bases = [held.get(key) for held in helds if held is not None]
            base = bases[0]
            assert all(other is base for other in bases), "one delivery: one base"
            assert (base is None) == (kind == INSERT), f"{kind} over {base!r}"
            for held in helds:
                if held is None:
                    continue
                if kind == OOF:
                    del held[key]
                else:
                    held[key] = data
            if kind == UPDATE:
                encoded = first.composite_body(key, base, version, data)
            else:
                encoded = first.full_body(key, version, data, {})
        command = OOF_COMMAND if kind == OOF else P_COMMAND
        if len(subs) == 1:
            message_head = first.message_head(command)
            if pos is not None and command is P_COMMAND:
                message_head += b',"pos":%d' % pos
        else:
            message_head = head(command, self.policy.name_json, [sub.sub_id for sub in subs])
        return Delivery(
            self.policy, (self.policy.name, key), kind, message_head, encoded, subs, base, data, version
        )

    def insert(self, key: str, data: Any, *subs: FakeReader, pos: int | None = None) -> Delivery:
        return self.change(INSERT, key, data, *subs, pos=pos)

    def update(self, key: str, data: Any, *subs: FakeReader, pos: int | None = None) -> Delivery:
        return self.change(UPDATE, key, data, *subs, pos=pos)

    def oof(self, key: str, data: Any, *subs: FakeReader) -> Delivery:
        return self.change(OOF, key, data, *subs)

    def full(self, key: str, data: Any, *subs: FakeReader) -> Delivery:
        return self.change(FULL, key, data, *subs)

    def run(self, sub: FakeReader, *records: tuple[str, Any]) -> RunBatch:
        """A run of FULL messages for one stateless subscription (the fan-out's fast lane)."""
        versions = [self.version(key, data) for key, data in records]
        bodies = [sub.full_body(v.key, v, v.data, {}) for v in versions]
        head_p = sub.head_p
        size = sum(len(b) for b in bodies) + len(bodies) * (len(head_p) + 2)
        return RunBatch(self.policy, sub, head_p, bodies, [v.key for v in versions], versions, size)


def tx_block(tx: int, *held: Delivery | RunBatch) -> TxBlock:
    """One transaction's messages for one socket, between its marks."""
    begin = orjson.dumps({"c": "tx_begin", "tx": str(tx)})
    end = orjson.dumps({"c": "tx_end", "tx": str(tx)})
    return TxBlock(begin, list(held), end)


def plain(name: str) -> bytes:
    """A plain message (an ack and the like), said as ``name``."""
    return orjson.dumps({"c": name})


# -- what a client receives ------------------------------------------------------------------------


def text(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{text(v)}" for k, v in value.items()) + "}"
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def describe(message: dict[str, Any]) -> str:
    command = message["c"]
    if command not in ("p", "oof"):
        return " ".join([command, *(str(message[f]) for f in ("tx", "n") if f in message)])
    sids = ",".join(message["sids"])
    key = message.get("k", "")
    if "from" in message:
        said = f"{command} {sids} {key}:{text(message['from'])}>{text(message['to'])}"
    else:
        said = f"{command} {sids} {key}={text(message['data'])}"
    return said + (f" @{message['pos']}" if "pos" in message else "")


def said(parts: list[bytes]) -> list[str]:
    """Rendered parts (a queue entry's ``render``: heads and bodies, or whole messages) as lines."""
    return [describe(m) for m in orjson.loads(b"[" + b",".join(parts) + b"]")]


def frames(outbox: Outbox, max_frame_bytes: int = 1 << 20) -> list[list[str]]:
    """Everything queued, drained as the writer does: each frame's messages as lines."""
    out: list[list[str]] = []
    while (frame := outbox.take_frame(max_frame_bytes)) is not None:
        out.append([describe(m) for m in orjson.loads(frame)])
    return out


def sent(outbox: Outbox) -> list[str]:
    """Everything queued, drained, as lines (frames joined)."""
    return [line for frame in frames(outbox) for line in frame]


def client_copies(outbox: Outbox, held: dict[str, dict[str, Any]] | None = None) -> dict[str, dict[str, Any]]:
    """Everything queued, drained and applied as a client applies it: each subscription's copy of
    each record, from ``held`` (sid -> key -> record: what it held before). A delta must start
    from the copy the client holds (the fake's deltas name their base), or the test fails here."""
    copies = {sid: dict(records) for sid, records in (held or {}).items()}
    while (frame := outbox.take_frame(1 << 20)) is not None:
        for message in orjson.loads(frame):
            if message["c"] not in ("p", "oof"):
                continue
            key = message["k"]
            for sid in message["sids"]:
                copy = copies.setdefault(sid, {})
                if message["c"] == "oof":
                    copy.pop(key, None)
                elif "from" in message:
                    assert copy.get(key) == message["from"], (
                        f"{sid} holds {key}={text(copy.get(key))}, sent a delta from {text(message['from'])}"
                    )
                    copy[key] = message["to"]
                else:
                    copy[key] = message["data"]
    return copies
