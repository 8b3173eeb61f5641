"""Socket-queue conflation (docs/protocol.md, Conflation): what the messages queued for one record come to.

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
message must not pass its own subscribe ack or snapshot; and when a snapshot of the record, or
of a whole view that gets the change, was queued after the newest entry). The nets of the
change's receivers move into that entry from older ones; the nets of other subscriptions stay
where they are (one unsubscribed since must not move past its unsubscribe ack). So a socket is
never sent an older state of a record after a newer one, and each subscription's messages keep
their order. Subscriptions of one socket whose messages come out byte-identical share one message
(``sids``). Every body comes from the subscriptions' one renderer (``full_body``,
``composite_body``), so select lists, ``no_sowkey``, ``timestamp`` and bookmarks always apply.

When the topic's ``conflation_merge`` makes a message send another state than the newest (the
older kept, or a merged record), that is what the client will hold: the subscription's ``held``
is corrected when the merge is decided (``Net.sends``), not when the message is written, so the
fan-out computes every later message from it, whatever is queued between (and so is the
``held`` of a subscription that took over its ``sub_id`` by ``replace``, a copy of it).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ..protocol.wire import OOF_COMMAND, P_COMMAND, head
from ..records.version import RecordVersion
from .delivery import FULL, INSERT, OOF, Delivery

if TYPE_CHECKING:
    from .delivery import QueuePolicy
    from .reader import Reader

log = logging.getLogger("server.conflation")

# The views merges replaced, by (record, subscription): the view the fan-out made for the last
# message queued, and the view of what that message sends instead (``Net.sends``).
Replaced = dict[tuple[tuple[str, str], "Reader"], tuple[Any, Any]]


class Net:
    """The net effect of the messages queued for one subscription about one record: one message
    of the socket's queue, in ``entry``."""

    __slots__ = ("base", "entry", "fresh", "last", "merged", "sub", "version", "view")

    def __init__(self, delivery: Delivery, sub: Reader, entry: RecordEntry) -> None:
        self.sub = sub
        self.entry = entry
        self.base: Any = delivery.base if delivery.kind != INSERT else None  # held before the first
        self.fresh = delivery.kind in (INSERT, OOF)  # a final state must then go in full
        self.last = delivery
        self.merged = False
        # What it sends (the newest, the older kept, or a merge: ``sends``) and the view of it.
        self.version = delivery.version
        self.view: Any = delivery.view

    def fold(self, delivery: Delivery, fresh: bool = False) -> None:
        """``delivery`` joins this message (then ``sends`` says what it sends). ``fresh``: what
        joins is a net that already had an insert or an OOF."""
        if fresh or delivery.kind in (INSERT, OOF):
            self.fresh = True
        self.last = delivery
        self.merged = True

    def sends(self, version: RecordVersion | None, replaced: Replaced) -> None:
        """This message sends ``version``, as conflation_merge decided (or the last delivery's
        own). When that is another state than the last delivery's (the older kept, or a merge),
        the view the fan-out made is replaced: the client will hold the view of ``version``
        instead. The subscription's ``held`` is corrected at once, not when the message is
        written, so every later message about the record is computed from what the client will
        hold, whatever is queued between (a snapshot or a transaction cuts the queue's index; a
        transaction's block is encoded when it is made). When the fan-out made a message from
        the replaced view already (a relief decides merges over queued messages; a transaction's
        block folds its messages in order), ``replaced`` keeps the correction for it
        (``rebase``), until the subscription's next message about the record is queued."""
        last = self.last
        if version is not last.version:
            self.merged = True
        if version is last.version or version is None or last.kind in (FULL, OOF):
            # (A stateless subscriber's message is its version's record: no view to hold.)
            self.version, self.view = version, last.view if version is last.version else None
            if replaced:
                replaced.pop((self.entry.record, self.sub), None)
            return
        if version is not self.version or self.view is None:  # (else it is the view of it)
            self.version, self.view = version, self.sub.view_of(version)
        record, key = self.entry.record, self.entry.key
        sub: Reader | None = self.sub
        while sub is not None:  # (a ``replace`` took over what the subscription held)
            held = sub.held
            if held is not None:
                holds = held.get(key)
                if holds is last.view:
                    held[key] = holds = self.view  # every later message is computed from it
                if holds is not self.view:  # the fan-out made one from the replaced view already
                    replaced[(record, sub)] = (last.view, self.view)
                elif replaced:
                    replaced.pop((record, sub), None)
            sub = sub.successor

    def rebase(self, replaced: Replaced) -> None:
        """Queued after a message whose last delivery's view a merge replaced: when this one
        was computed from that view (its delivery was made before the merge), it starts from
        what the client will hold instead."""
        if not replaced or self.fresh:
            return
        instead = replaced.get((self.entry.record, self.sub))
        if instead is not None and self.base is instead[0]:
            self.base = instead[1]
            self.merged = True

    def absorb(self, removed: Net) -> None:
        """The subscription's message before this one was taken out of the queue (conflated
        with a newer one): this one now starts from what the client held before that one."""
        self.base = removed.base
        self.fresh = self.fresh or removed.fresh
        self.merged = True

    def message(self, key: str) -> tuple[str, bytes]:
        """The one message (kind, body) that takes the subscriber from what it held to the net state."""
        sub, last = self.sub, self.last
        if not self.merged or last.kind == OOF:
            return last.kind, last.body
        version = self.version
        assert version is not None
        if last.kind == FULL:
            if version is last.version:
                return FULL, last.body
            return FULL, sub.body_of(key, version)
        if self.fresh or self.base is None:
            return INSERT, sub.full_body(key, version, self.view, {})
        return last.kind, sub.composite_body(key, self.base, version, self.view)


class RecordEntry:
    """Messages queued on one socket about one record, as one entry of its outbox: the nets of
    one or more subscriptions, in the order of their last change (the order they are sent in)."""

    __slots__ = ("count", "dead", "key", "nets", "policy", "record", "size")

    def __init__(self, policy: QueuePolicy, record: tuple[str, str]) -> None:
        self.policy = policy
        self.record = record
        self.key = record[1]
        self.nets: list[Net] = []
        self.dead = False  # emptied (its nets moved or conflated away): skipped where it is
        self.size = 0  # estimated: the newest messages' sizes
        self.count = 0  # messages: one per distinct newest delivery

    def append(self, net: Net) -> None:
        net.entry = self
        self.nets.append(net)
        self.dead = False

    def remove(self, net: Net) -> None:
        self.nets.remove(net)
        if not self.nets:
            self.dead = True

    def recount(self) -> None:
        lasts = {id(net.last): net.last for net in self.nets}
        self.size = sum(last.size for last in lasts.values())
        self.count = len(lasts)

    def render(self) -> list[bytes]:
        """The entry's messages as head and body parts: one message per distinct body."""
        groups: dict[tuple[bool, bytes, bytes | None, int], list[Reader]] = {}
        for net in self.nets:
            sub = net.sub
            if sub.dropped:
                continue  # dropped for back pressure, and told so: nothing more is owed to it
            kind, body = net.message(self.key)
            # A window's position after the last change is in that message's own head.
            own_head = net.last.head if kind != OOF and sub.positions else None
            group = (kind == OOF, body, own_head, 0)
            # A second message for its sid here: keep both. (A subscription replaced by another
            # of the same sid, and its successor, are one sid: never named twice in a message.)
            while any(other.sub_id == sub.sub_id for other in groups.get(group, ())):
                group = (*group[:3], group[3] + 1)
            groups.setdefault(group, []).append(sub)
        parts: list[bytes] = []
        for (is_oof, body, own_head, _), subs in groups.items():
            command = OOF_COMMAND if is_oof else P_COMMAND
            if own_head is not None:
                parts.append(own_head)
            elif len(subs) == 1:
                parts.append(subs[0].message_head(command))
            else:
                subs.sort(key=lambda sub: sub.order)
                parts.append(head(command, self.policy.name_json, [sub.sub_id for sub in subs]))
            parts.append(body)
        return parts


def conflate_with(
    queued: list[Net] | None, delivery: Delivery, sub: Reader, version: RecordVersion | None
) -> tuple[Net | None, RecordVersion | None]:
    """Which of ``sub``'s queued messages about the record ``delivery`` conflates with (the
    newest; the topic's matcher may pick another, or none: None) and the version it then sends,
    as the topic's merger decides (a merge, the older, the newer; keeping both is None).
    ``version`` is the state ``delivery`` sends: its own, or that of the net it ends."""
    if not queued:
        return None, version
    policy = delivery.policy
    picked = queued[-1] if policy.match is None else match(policy.match, queued, version)
    if picked is None or policy.merge is None or OOF in (delivery.kind, picked.last.kind):
        return picked, version
    assert picked.version is not None and version is not None
    decided = merge_outcome(policy.merge, picked.version, version)
    if decided is None:
        return None, version  # keep both
    if not sub.entitlement.allows(decided.data):
        return picked, version  # a merged record its reader may not see is never sent
    return picked, decided


def merge_outcome(function: Any, older: RecordVersion, newer: RecordVersion) -> RecordVersion | None:
    """What a ``conflation_merge`` function decides for a queued record and a newer one: the
    older kept (it returned ``older``), the newer kept (``newer``), a merged record (anything
    else), or None: keep both (it returned None), no conflation for this pair."""
    older_data, newer_data = older.data, newer.data  # a compact version decodes on each use
    try:
        merged = function(older_data, newer_data)
    except Exception:
        log.exception("conflation_merge of topic record %s failed; keeping the newer record", newer.key)
        return newer
    if merged is None:
        return None
    if merged is older_data:
        return older
    if merged is newer_data:
        return newer
    return RecordVersion(newer.key, merged, newer.seq, newer.timestamp, newer.expires_at)


def match(matcher: Any, queued: list[Net], version: RecordVersion | None) -> Net | None:
    """Which of a subscription's queued messages about a record (oldest first) the new one, which
    sends ``version``, conflates with, as a ``conflation_match`` function picks it (None:
    neither, queue it)."""
    records = [net.version.data if net.version is not None else None for net in queued]
    new = version.data if version is not None else None
    topic = queued[0].last.policy.name
    try:
        chosen = matcher(records, new)
    except Exception:
        log.exception("conflation_match of topic %s failed; conflating with the newest", topic)
        return queued[-1]
    if chosen is None:
        return None
    if type(chosen) is not int or not -len(queued) <= chosen < len(queued):
        log.error(
            "conflation_match of topic %s returned %r, not an index of the queued messages or None; "
            "conflating with the newest",
            topic,
            chosen,
        )
        return queued[-1]
    return queued[chosen]
