"""Queued deliveries: one message about one record for one group of subscriptions of one socket.

A ``Delivery`` is the message as the fan-out made it (the ``sids`` of the message are ``subs``),
with what is needed to fold it into the net effect of several (conflation.py):
- ``kind``: INSERT (the group held nothing: the message carries the record), UPDATE (it held
  ``base``: the message takes it to ``view``), OOF (the record left the view), or FULL (a
  stateless subscription: every message carries the whole record and nothing is remembered);
- ``base``: what the group held before this message (UPDATE and OOF), ``view``: after it;
- ``version``: the record version the message was computed from;
- ``record``: (topic, SowKey), the record it is about (None on a plain topic);
- ``policy``: what the socket queue needs of the topic (``QueuePolicy``), never the topic.

Subscriptions share one delivery only when their messages, bases and views are identical, so
the net effect of a group is the net effect of each of its members.
"""

from __future__ import annotations

from collections.abc import Container
from typing import TYPE_CHECKING, Any

from ..protocol.wire import OOF_COMMAND, P_COMMAND, head
from .latency import TopicLatency

if TYPE_CHECKING:
    from ..records.version import RecordVersion
    from .reader import Reader

INSERT, UPDATE, OOF, FULL = "insert", "update", "oof", "full"

CONFLATED_POLICIES = ("conflate", "always")  # the topic policies whose messages are merged
# What a topic counts of its messages in socket queues (``QueuePolicy.counters``): merged into
# newer ones, dropped, subscriptions dropped, sockets closed with 4001, and bytes written.
COUNTERS = ("conflated", "dropped", "unsubscribed", "closed_slow", "sent_bytes")


class QueuePolicy:
    """What a socket queue needs to know of a topic, as one small value every delivery carries:
    its name (for message heads and log lines), its conflation policy (off, conflate, always,
    unsubscribe) and mode (replace, append), its merger and matcher, and its counters and latency
    histograms (shared with the topic, which reports them)."""

    __slots__ = ("conflation", "counters", "latency", "match", "merge", "mode", "name", "name_json")

    def __init__(
        self,
        name: str,
        name_json: bytes,
        conflation: str,
        mode: str,
        merge: Any,
        match: Any,
        counters: dict[str, int],
        latency: TopicLatency,
    ) -> None:
        self.name = name
        self.name_json = name_json
        self.conflation = conflation
        self.mode = mode
        self.merge = merge
        self.match = match
        self.counters = counters
        self.latency = latency


class Delivery:
    __slots__ = (
        "base",
        "body",
        "head",
        "kind",
        "policy",
        "record",
        "size",
        "subs",
        "timed",
        "version",
        "view",
    )

    def __init__(
        self,
        policy: QueuePolicy,
        record: tuple[str, str] | None,
        kind: str,
        head: bytes,
        body: bytes,
        subs: tuple[Reader, ...] = (),
        base: Any = None,
        view: Any = None,
        version: RecordVersion | None = None,
    ) -> None:
        self.policy = policy
        self.record = record
        self.kind = kind
        self.head = head
        self.body = body
        self.subs = subs
        self.base = base
        self.view = view
        self.version = version
        self.size = len(head) + len(body) + 2
        # A message about a change as it happens: its write latency is measured. Not so for a
        # replay from the log or a view re-evaluated on a new filter (old changes, sent now).
        self.timed = True


class RunBatch:
    """A run of FULL deliveries to one stateless subscription: the socket's head with the run's
    bodies, keys and versions, which are shared by every socket and never modified."""

    __slots__ = ("bodies", "head", "keys", "policy", "size", "subs", "versions")

    def __init__(
        self,
        policy: QueuePolicy,
        sub: Reader,
        head: bytes,
        bodies: list[bytes],
        keys: list[Any],
        versions: list[Any],
        size: int,
    ) -> None:
        self.policy = policy
        self.subs = (sub,)
        self.head = head
        self.bodies = bodies
        self.keys = keys
        self.versions = versions
        self.size = size

    def take_into(self, parts: list[bytes], size: int, max_frame_bytes: int) -> tuple[int, int]:
        """Move as many of the run's messages into ``parts`` (a frame ``size`` bytes full) as fit in
        ``max_frame_bytes``, at least one into an empty frame: the bytes and messages moved. The
        rest stays in the run."""
        count = len(self.bodies)
        if size + self.size <= max_frame_bytes or (not parts and count == 1):
            interleaved = [self.head] * (2 * count)
            interleaved[1::2] = self.bodies  # in C: no Python work per message
            parts.extend(interleaved)
            return self.size, count
        head_size = len(self.head) + 2
        taken = taken_bytes = 0
        for body in self.bodies:
            message = head_size + len(body)
            if (parts or taken) and size + taken_bytes + message > max_frame_bytes:
                break
            taken_bytes += message
            taken += 1
        for body in self.bodies[:taken]:
            parts.append(self.head)
            parts.append(body)
        # The lists are shared with other sockets: slice, never modify.
        self.bodies, self.keys, self.versions = self.bodies[taken:], self.keys[taken:], self.versions[taken:]
        self.size -= taken_bytes
        return taken_bytes, taken

    def deliveries(self) -> list[Delivery]:
        head, policy = self.head, self.policy
        return [
            Delivery(
                policy,
                (policy.name, key) if key is not None else None,
                FULL,
                head,
                body,
                self.subs,
                version=version,
            )
            for body, key, version in zip(self.bodies, self.keys, self.versions, strict=True)
        ]


class TxBlock:
    """Everything a transaction (docs/protocol.md, Transactions) sent one socket, between ``tx_begin`` and
    ``tx_end``: queued as one entry, written in one frame, never split (a relief may merge it
    with later ones and what is queued between them, tx_merge.py). Its records (topic, key) are
    passed like a snapshot's: a later change of one goes after the block, or joins it merged."""

    __slots__ = ("begin", "count", "counted", "counted_size", "end", "held", "parts", "records", "size")

    def __init__(self, begin: bytes, held: list[Delivery | RunBatch], end: bytes) -> None:
        self.begin, self.held, self.end = begin, held, end
        parts = [begin]
        records: list[tuple[str, str]] = []
        for item in held:
            if isinstance(item, Delivery):
                parts += (item.head, item.body)
                if item.record is not None:
                    records.append(item.record)
            else:
                for body, key in zip(item.bodies, item.keys, strict=True):
                    parts += (item.head, body)
                    if key is not None:
                        records.append((item.policy.name, key))
        parts.append(end)
        self.parts = parts
        self.records = records
        self.count = (len(parts) - 2) // 2 + 2
        # A delivery's head and body are joined by a comma, messages by another: one byte each.
        self.size = sum(len(part) + 1 for part in parts)
        # What it counts against a queue's bounds (set by the queue: at most half of each).
        self.counted, self.counted_size = self.count, self.size

    def render(self) -> list[bytes]:
        return self.parts

    def without(self, gone: Container[Reader] = ()) -> TxBlock | None:
        """The block without the messages of subscriptions dropped for back pressure since it was
        made, or being dropped (``gone``): a dropped subscription gets nothing after its
        ``unsubscribed``, nor a delta whose base was dropped. None: nothing left."""
        held = [kept for item in self.held if (kept := kept_for(item, gone)) is not None]
        return TxBlock(self.begin, held, self.end) if held else None


def kept_for(item: Delivery | RunBatch, gone: Container[Reader]) -> Delivery | RunBatch | None:
    """``item`` for those of its subscriptions neither dropped nor in ``gone`` (None: for none)."""
    subs = tuple(sub for sub in item.subs if not sub.dropped and sub not in gone)
    if not subs:
        return None
    if isinstance(item, RunBatch) or len(subs) == len(item.subs):
        return item
    command = OOF_COMMAND if item.kind == OOF else P_COMMAND
    sids = head(command, item.policy.name_json, [sub.sub_id for sub in subs])
    kept = Delivery(item.policy, item.record, item.kind, sids, item.body, subs)
    kept.base, kept.view, kept.version, kept.timed = item.base, item.view, item.version, item.timed
    return kept
