"""A ``replace`` that is not a viewport's move (moving.py): the subscription's ``sub_id`` takes a
new filter and options in one step (docs/protocol.md, Commands), or an aggregated view moves to
another aggregation (another filter, grouping or projection: docs/protocol.md, Aggregated views).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import compress
from operator import not_
from typing import TYPE_CHECKING, Any

from ..fanout.passes import Selection
from ..fanout.subscription import Message, Subscription
from ..fanout.topic import Topic
from ..filters.entitlement import gate_share

if TYPE_CHECKING:
    from ..broker.broker import Broker


def replace(topic: Topic, old: Subscription, new: Subscription, snapshot: bool) -> None:
    """Swap in the new filter and options in one step, with every guarantee a new subscription
    has: what the old one still owed is delivered first (nothing lost); records the client holds
    that the new one does not match leave (an OOF when the old or the new options asked for it);
    records it keeps stay held, so the next delta is relative to what the client has, unless the
    view changed (another select list, say): then the record is sent again in full, as it is now
    (by the snapshot, for ``sow_and_*``)."""
    owed, tx = old.release(math.inf)  # changes waiting for an interval's end
    with old.session.tx_frames.whole(tx):
        for _, record_key, owed_change in owed:
            topic.deliver(old.session, (old,), record_key, owed_change)
    topic.replace(old, new)
    old.closed = True
    old.hand_over(new)
    if not redecides(topic, old, new, snapshot):
        return  # nothing to send or to remember of what the client holds: no pass
    same_view = _same_view(topic, old, new)
    wants_oof = old.options.oof or new.options.oof
    # What the client holds (the views the old subscription remembers, or, when it remembered
    # nothing, the records it matches now, each as the old subscription would have sent it) and
    # whether the new one keeps each: found in slices before it ran (preparing_replace.py), or now.
    held = redecided(topic, old, new) or _redecide_whole(topic, old, new)
    keys, views, keeps = held.keys, held.views, held.keeps
    remembered = new.held if same_view else None
    if remembered is not None:  # the records it keeps stay held, as the client holds them
        _remember_kept(remembered, old.held, keys, views, keeps)
    if same_view or snapshot:  # messages only for the records that leave, if OOFs are asked
        sent: Iterable[int] = compress(range(len(keys)), map(not_, keeps)) if wants_oof else ()
    else:  # every record: those it keeps are sent again in full (another view)
        sent = range(len(keys))
    records = topic.records
    for index in sent:
        key = keys[index]
        version = records[key]
        change: Message | None = (
            new.replayed(key, None, version, {})
            if keeps[index]
            else old.oof_message(key, version, old.left_because(version), views[index], {})
            if wants_oof
            else None
        )
        if change is not None:
            topic.deliver(old.session, (new,), key, change, timed=False)  # the view, not a change


@dataclass(slots=True)
class Held:
    """What the client holds of each record that still exists, in the order it holds them: their
    keys, the views it was sent, and whether the new subscription keeps each. Three lists, not a
    tuple a record: 200,000 tuples, each one more object for the collector to count, and a loop
    over each, were most of a replace's last step; the records kept are remembered in one
    ``dict.update`` and only those that leave are walked."""

    keys: list[str]
    views: list[Any]
    keeps: list[bool]


def _remember_kept(
    remembered: dict[str, Any],
    before: dict[str, Any] | None,
    keys: list[str],
    views: list[Any],
    keeps: list[bool],
) -> None:
    """Remember the views of the records kept, in the order the client holds them. When the old
    subscription remembered them (``before``) and nothing is remembered yet, its dict is copied
    whole and what leaves deleted: a copy of 200,000 entries is a copy of the table, where
    inserting each one at a time took 50 to 120 ms."""
    if before is None or remembered or len(keys) != len(before):
        remembered.update(compress(zip(keys, views, strict=True), keeps))
        return
    remembered.update(before)  # (every key it held is still a record: ``keys`` is all of them)
    for key in compress(keys, map(not_, keeps)):
        del remembered[key]


def _redecide_whole(topic: Topic, old: Subscription, new: Subscription) -> Held:
    """What the client holds and what ``new`` keeps of it, decided now, in one pass."""
    records = topic.records
    if old.held is not None:
        held = old.held
        keys = [key for key in held if key in records]
        views = [held[key] for key in keys]
    else:
        versions = [v for v in records.values() if old.in_view(v.key, v.data)]
        keys = [v.key for v in versions]
        views = [old.view_of(v) for v in versions]
    return Held(keys, views, [new.in_view(key, records[key].data) for key in keys])


def redecides(topic: Topic, old: Subscription, new: Subscription, snapshot: bool) -> bool:
    """Whether the replace of ``old`` by ``new`` may send or remember anything of what the client
    holds: an OOF for a record that leaves (either side asked for OOFs), the new view of one it
    keeps (the new subscription remembers what it sent), or a record sent again in full (another
    view, and no snapshot to send it). A plain subscription given another plain filter does none:
    its replace reads no record."""
    if old.options.oof or new.options.oof:
        return True
    return new.held is not None if _same_view(topic, old, new) else not snapshot


def _same_view(topic: Topic, old: Subscription, new: Subscription) -> bool:
    """Whether the client holds each record as the new subscription would send it. A stateless
    subscription remembers nothing, so what the client holds is taken to be the records it matches
    now; but where a merge function may have kept an older record in the socket's queue
    (docs/protocol.md, Conflation), the client will not hold that: the new view starts from the
    record in full."""
    guessed = old.held is None and topic.queue.merge is not None
    return old.view_kind == new.view_kind and not guessed


def replace_share(old: Subscription, new: Subscription) -> tuple[Any, ...]:
    """Which re-decision a pass found the records of: the subscription replaced, the gates of the
    old view and the new (a reload that moved either since runs the replace whole), and whether
    the old one remembered what it sent."""
    return (
        "replace",
        id(old),
        gate_share(old.filters, old.entitlement, old.ctx),
        gate_share(new.filters, new.entitlement, new.ctx),
        old.held is None,
    )


def redecided(topic: Topic, old: Subscription, new: Subscription) -> Held | None:
    """What a pass in slices found for the replace of ``old`` by ``new`` (taken from the topic),
    as the records are now; None when none was prepared for it."""
    prepared = topic.take_prepared(replace_share(old, new))
    if not isinstance(prepared, Selection):
        return None
    _, versions, found = prepared.finish(0, None)
    if old.held is None:  # the records the old filter matches, each with (its view, the new verdict)
        assert found is not None  # (made by the pass: preparing_replace.py's ``seen``)
        return Held([v.key for v in versions], [seen[0] for seen in found], [seen[1] for seen in found])
    kept = {version.key for version in versions}  # the records the new filter matches
    records, held = topic.records, old.held
    keys = [key for key in held if key in kept or key in records]
    return Held(keys, [held[key] for key in keys], [key in kept for key in keys])


def switch(broker: Broker, old: Subscription, new: Subscription, groups: Topic) -> None:
    """A ``replace`` onto another aggregation (another filter, grouping or projection): what the
    old one owed goes first, the groups the client held leave (an OOF ``match`` when either asked
    for OOFs: they are groups of another view), and the new view's snapshot follows."""
    before = old.topic_ref
    owed, tx = old.release(math.inf)
    with old.session.tx_frames.whole(tx):
        for _, key, change in owed:
            before.deliver(old.session, (old,), key, change)
    old.hand_over(new)  # before anything is queued for the new one: a drop goes with the sub_id
    if (old.options.oof or new.options.oof) and old.held is not None:
        for key, held in list(old.held.items()):
            version = before.records.get(key)
            if version is not None:
                message = old.oof_message(key, version, "match", held, {})
                if message is not None:
                    before.deliver(old.session, (new,), key, message, timed=False)
    broker.unsubscribe(old)  # its aggregation goes with its last subscriber
    groups.add(new)
