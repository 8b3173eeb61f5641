"""Socket-queue conflation (PROTOCOL 6.3): what the messages queued for one record come to.

While a socket's queue is keyed (after a relief, and always for ``always`` topics), every
message about one record joins that record's one ``RecordEntry``. The entry keeps, for each
subscription it names, the net effect of everything queued for it, and is rendered only when
the writer takes it:

    the subscriber held before   it holds after      it is sent
    nothing or a record          nothing             the last OOF (an OOF is never silenced)
    a record, updates only       a record            the change from the first base to the last
                                                     state: a delta or the record, whichever is
                                                     smaller
    otherwise (an insert, or     a record            the last state in full (out then in is the
    out and back in)                                 final state; a new record is never a delta)
    stateless (FULL)                                 the last record, or the structural merge

So there is at most one queued message per record and view. A change of a record joins the
record's newest queued entry, in its place (mode ``replace``), or a new entry at the end (mode
``append``; and whenever a subscription new to the record is among its receivers, whose first
message must not pass its own subscribe ack or snapshot; and when a snapshot of the record was
queued after the newest entry). The nets of the change's receivers move into that entry from
older ones; the nets of other subscriptions stay where they are (one unsubscribed since must not
move past its unsubscribe ack). So a socket is never sent an older state of a record after a
newer one, and each subscription's messages keep their order. Subscriptions of one socket whose
messages come out byte-identical share one message (``sids``). Every body comes from the
subscriptions' one renderer (``full_body``, ``composite_body``), so select lists,
``no_sowkey``, ``timestamp`` and bookmarks always apply.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from .delivery import FULL, INSERT, OOF, Delivery
from .records import RecordVersion
from .subscription import OOF as OOF_COMMAND
from .subscription import P
from .wire import head

if TYPE_CHECKING:
    from .subscription import Subscription
    from .topic import Topic

log = logging.getLogger("server.conflation")


class _Net:
    """The net effect of the messages queued for one subscription about one record."""

    __slots__ = ("base", "fresh", "last", "merged", "version")

    def __init__(self, delivery: Delivery) -> None:
        self.base: Any = delivery.base if delivery.kind != INSERT else None  # held before the first
        self.fresh = delivery.kind in (INSERT, OOF)  # a final state must then go in full
        self.last = delivery
        self.version = delivery.version  # what to send: the newest, or the structural merge
        self.merged = False

    def fold(self, delivery: Delivery, sub: Subscription, merge_function: Any) -> None:
        if delivery.kind in (INSERT, OOF):
            self.fresh = True
        version = delivery.version
        if merge_function is not None and OOF not in (delivery.kind, self.last.kind):
            assert self.version is not None and version is not None
            merged = _structural(merge_function, self.version, version)
            # A merged record that its reader may not see is never sent: the newer one goes instead.
            if sub.entitlement.allows(merged.data):
                version = merged
        self.version = version
        self.last = delivery
        self.merged = True

    def message(self, sub: Subscription, key: str) -> tuple[str, bytes]:
        """The one message (kind, body) that takes ``sub`` from what it held to the net state."""
        last = self.last
        if not self.merged or last.kind == OOF:
            return last.kind, last.body
        version = self.version
        assert version is not None
        if last.kind == FULL:
            if version is last.version:
                return FULL, last.body
            return FULL, sub.full_body(key, version, sub.view_of(version), {})
        view = last.view
        if version is not last.version:
            view = sub.view_of(version)
            if sub.held is not None and sub.held.get(key) is last.view:
                sub.held[key] = view  # the next delta is taken from what the subscriber will hold
        if self.fresh or self.base is None:
            return INSERT, sub.full_body(key, version, view, {})
        return last.kind, sub.composite_body(key, self.base, version, view)


class RecordEntry:
    """Everything queued on one socket about one record, as one entry of its outbox."""

    __slots__ = ("count", "dead", "key", "nets", "record", "size", "topic")

    def __init__(self, topic: Topic, record: tuple[str, str]) -> None:
        self.topic = topic
        self.record = record
        self.key = record[1]
        self.nets: dict[Subscription, _Net] = {}
        self.dead = False  # emptied (its nets moved to a newer entry): skipped where it is
        self.size = 0  # estimated: the newest messages' sizes
        self.count = 0  # messages: one per distinct newest delivery

    def add(self, delivery: Delivery, subs: tuple[Subscription, ...]) -> None:
        """Fold ``delivery`` in for ``subs`` (a subscription without a net here starts one)."""
        merge_function = self.topic.merge_function
        nets = self.nets
        for sub in subs:
            net = nets.pop(sub, None)  # to the end: nets stay in the order of their last
            if net is None:  # change, which is the order they are sent in
                net = _Net(delivery)
            else:
                net.fold(delivery, sub, merge_function)
            nets[sub] = net
        self.recount()

    def hand_over(self, sub: Subscription, newer: RecordEntry) -> None:
        """Move ``sub``'s net to ``newer``, a later entry for the same record, so that its next
        change is sent after what ``newer`` holds and never ahead of an older state."""
        newer.nets[sub] = self.nets.pop(sub)
        newer.recount()
        self.recount()
        if not self.nets:
            self.dead = True

    def recount(self) -> None:
        lasts = {id(net.last): net.last for net in self.nets.values()}
        self.size = sum(last.size for last in lasts.values())
        self.count = len(lasts)

    def render(self) -> list[bytes]:
        """The entry's messages as head and body parts: one message per distinct body."""
        groups: dict[tuple[bool, bytes, bytes | None], list[Subscription]] = {}
        for sub, net in self.nets.items():
            if sub.dropped:
                continue  # dropped for back pressure, and told so: nothing more is owed to it
            kind, body = net.message(sub, self.key)
            # A window's position after the last change is in that message's own head.
            own_head = net.last.head if kind != OOF and sub.positions else None
            groups.setdefault((kind == OOF, body, own_head), []).append(sub)
        parts: list[bytes] = []
        for (is_oof, body, own_head), subs in groups.items():
            command = OOF_COMMAND if is_oof else P
            if own_head is not None:
                parts.append(own_head)
            elif len(subs) == 1:
                parts.append(subs[0].heads[command])
            else:
                subs.sort(key=lambda sub: sub.order)
                parts.append(head(command, self.topic.name_json, [sub.sub_id for sub in subs]))
            parts.append(body)
        return parts


def _structural(function: Any, older: RecordVersion, newer: RecordVersion) -> RecordVersion:
    try:
        merged = function(older.data, newer.data)
    except Exception:
        log.exception("conflation_merge of topic record %s failed; keeping the newer record", newer.key)
        return newer
    return RecordVersion(newer.key, merged, newer.seq, newer.timestamp, newer.expires_at)
