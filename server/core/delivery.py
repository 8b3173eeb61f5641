"""Queued deliveries and the merge table of socket-queue conflation (PROTOCOL 6.3).

A ``Delivery`` is one message about one record for one group of subscriptions of one socket
(the ``sids`` of the message), with what is needed to render a composite of several:
- ``kind``: INSERT (the group held nothing: the message carries the record), UPDATE (it held
  ``base``: the message takes it to ``view``), OOF (the record left the view), or FULL (a
  stateless subscription: every message carries the whole record and nothing is remembered);
- ``base``: what the group held before this message (UPDATE), ``view``: what it holds after;
- ``version``: the record version the message was computed from.

The merge table: what one queued message for a record followed by a newer one becomes.

    older   newer    result
    INSERT  UPDATE   INSERT of the newer state (a new record is never sent as a delta)
    INSERT  OOF      the OOF alone (the record left before it was seen; the OOF is kept)
    UPDATE  UPDATE   UPDATE from the older base to the newer state, as a patch or the whole
                     record, whichever encodes smaller
    UPDATE  OOF      the OOF alone (it removes the record the subscriber still holds)
    OOF     any      not merged: the newer one is queued after it (an OOF is never silenced
                     and a removal never becomes an update)
    FULL    FULL     the newer message, or the structural merge of the two records
    (a delete is an OOF with reason ``deleted``; INSERT never follows INSERT or UPDATE, and
    UPDATE never follows OOF, because the subscription's own state forbids it)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .records import RecordVersion
    from .subscription import Subscription
    from .topic import Topic

INSERT, UPDATE, OOF, FULL = "insert", "update", "oof", "full"

# (older kind, newer kind) -> kind of the merged message; absent: the two are not merged.
MERGE_TABLE: dict[tuple[str, str], str] = {
    (INSERT, UPDATE): INSERT,
    (INSERT, OOF): OOF,
    (UPDATE, UPDATE): UPDATE,
    (UPDATE, OOF): OOF,
    (FULL, FULL): FULL,
}


class Delivery:
    __slots__ = ("base", "body", "ckey", "dead", "head", "kind", "size", "subs", "topic", "version", "view")

    def __init__(
        self,
        topic: Topic,
        ckey: tuple[Any, ...] | None,
        kind: str,
        head: bytes,
        body: bytes,
        subs: tuple[Subscription, ...] = (),
        base: Any = None,
        view: Any = None,
        version: RecordVersion | None = None,
    ) -> None:
        self.topic = topic
        self.ckey = ckey  # (SowKey, group head): messages about one record for one sids group
        self.kind = kind
        self.head = head
        self.body = body
        self.subs = subs
        self.base = base
        self.view = view
        self.version = version
        self.size = len(head) + len(body) + 2
        self.dead = False  # merged into a newer entry that took its place at the end (append mode)


class RunBatch:
    """A run of FULL deliveries to one stateless subscription: the socket's head with the run's
    bodies, keys and versions, which are shared by every socket and never modified."""

    __slots__ = ("bodies", "head", "keys", "size", "subs", "topic", "versions")

    def __init__(
        self,
        topic: Topic,
        sub: Subscription,
        head: bytes,
        bodies: list[bytes],
        keys: list[Any],
        versions: list[Any],
        size: int,
    ) -> None:
        self.topic = topic
        self.subs = (sub,)
        self.head = head
        self.bodies = bodies
        self.keys = keys
        self.versions = versions
        self.size = size

    def deliveries(self) -> list[Delivery]:
        head, topic = self.head, self.topic
        return [
            Delivery(
                topic, (key, head) if key is not None else None, FULL, head, body, self.subs, version=version
            )
            for body, key, version in zip(self.bodies, self.keys, self.versions, strict=True)
        ]
