"""Folding a message about a record into a keyed queue (docs/protocol.md, Conflation): the socket's own queue
after a relief (outbox.py), or the messages of a merged transaction block (tx_merge.py). Both
are a sequence of entries with a ``QueuedRecords`` index of it; what a message joins, and where,
is decided here once for both (the rules are in conflation.py's docstring).

What folds is either a new delivery (for each of its subscriptions) or one subscription's net
that was queued elsewhere and moves in (a merged block takes in what was queued between two
transactions): the net then conflates like the delivery it ends, and keeps what it already
held (its base, and whether it had an insert or an OOF).
"""

from __future__ import annotations

from collections.abc import Callable, MutableSequence
from typing import TYPE_CHECKING, Any, NamedTuple

from .conflation import Net, RecordEntry, conflate_with

if TYPE_CHECKING:
    from ..records.version import RecordVersion
    from .delivery import Delivery
    from .index import QueuedRecords
    from .reader import Reader


class Folded(NamedTuple):
    size: int  # bytes the entries' estimate changed by
    messages: int  # messages they changed by
    conflated: bool  # something was merged into a queued message


def fold(
    entries: MutableSequence[Any],
    queued: QueuedRecords,
    delivery: Delivery,
    room: Callable[[int], bool] | None = None,
    moving: Net | None = None,
) -> Folded | None:
    """Queue ``delivery`` (or ``moving``, a net whose last message it is) into the record's
    entries. For each subscription it conflates with one of that subscription's queued messages
    about the record (the newest; the topic's ``conflation_match`` may pick another, or none),
    as the topic's ``conflation_merge`` decides (the merge, the older, the newer, or both kept);
    the messages it conflates with and the new ones go into the record's newest entry when that
    may take them (mode ``replace``, no subscription new to the record), else into a new entry
    at the end. None (and nothing changed) when a new message is needed and ``room`` says it
    does not fit."""
    record = delivery.record
    assert record is not None
    policy = delivery.policy
    index = queued.nets
    plans: list[tuple[Reader, Net | None, RecordVersion | None]] = []
    adds = fresh = False
    subs = delivery.subs if moving is None else (moving.sub,)
    sent = delivery.version if moving is None else moving.version
    for sub in subs:
        mine = index.get((record, sub))
        fresh = fresh or not mine  # its first message about the record: after its ack
        picked, version = conflate_with(mine, delivery, sub, sent)
        adds = adds or picked is None
        plans.append((sub, picked, version))
    if adds and room is not None and not room(delivery.size):
        return None
    latest = queued.latest
    target = latest.get(record)  # None: none queued, or a snapshot or transaction of it since
    if target is None or (target is not entries[-1] and (fresh or policy.mode == "append")):
        target = latest[record] = RecordEntry(policy, record)
        entries.append(target)
    touched = {target}
    for _, picked, _ in plans:
        if picked is not None:
            touched.add(picked.entry)
    before_bytes = sum(entry.size for entry in touched)
    before_messages = sum(entry.count for entry in touched)
    conflated = False
    replaced = queued.replaced
    for sub, picked, version in plans:
        mine = index.setdefault((record, sub), [])
        if picked is not None and picked is mine[-1]:
            if version is not picked.version:  # the older kept stays where it is: moved
                picked.entry.remove(picked)  # behind a newer state it would go back in time
                target.append(picked)  # nets stay in the order of their last change
            picked.fold(delivery, moving is not None and moving.fresh)
            picked.sends(version, replaced)
            conflated = True
            continue
        if picked is not None:
            # An older message of this subscription: it leaves the queue, the next one
            # starts from what the client held before it, and the conflation of the two
            # goes after everything else queued for the subscription.
            following = mine[mine.index(picked) + 1]
            following.absorb(picked)
            picked.entry.remove(picked)
            mine.remove(picked)
            conflated = True
        net = Net(delivery, sub, target) if moving is None else moving
        target.append(net)
        mine.append(net)
        net.rebase(replaced)  # (made before a merge decided what the client holds before it)
        net.sends(version, replaced)
    if conflated:
        policy.counters["conflated"] += 1
    for entry in touched:
        entry.recount()
    return Folded(
        sum(entry.size for entry in touched) - before_bytes,
        sum(entry.count for entry in touched) - before_messages,
        conflated,
    )
