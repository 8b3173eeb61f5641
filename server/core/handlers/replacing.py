"""A ``replace`` that is not a viewport's move (moving.py): the subscription's ``sub_id`` takes a
new filter and options in one step (docs/protocol.md, Commands), or an aggregated view moves to
another aggregation (another filter, grouping or projection: docs/protocol.md, Aggregated views).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ..fanout.subscription import Message, Subscription
from ..fanout.topic import Topic

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
    # A stateless subscription remembers nothing, so what the client holds is taken to be the
    # records it matches now; but where a merge function may have kept an older record in the
    # socket's queue (docs/protocol.md, Conflation), the client will not hold that: the new view
    # starts from the record in full.
    guessed = old.held is None and topic.queue.merge is not None
    same_view = old.view_kind == new.view_kind and not guessed
    wants_oof = old.options.oof or new.options.oof
    # What the client holds: the views the old subscription remembers, or (when it remembered
    # nothing) the records it matches now, each as the old subscription would have sent it.
    held: dict[str, Any] = (
        dict(old.held)
        if old.held is not None
        else {v.key: old.view_of(v) for v in topic.records.values() if old.in_view(v.key, v.data)}
    )
    for key, view in held.items():
        version = topic.records.get(key)
        if version is None:
            continue
        change: Message | None = None
        if new.in_view(key, version.data):
            if same_view:
                new.remember(key, view)
            elif not snapshot:
                change = new.replayed(key, None, version, {})
        elif wants_oof:
            change = old.oof_message(key, version, old.left_because(version), view, {})
        if change is not None:
            topic.deliver(old.session, (new,), key, change, timed=False)  # the view, not a change


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
