"""Entitlements that move, for aggregated views (docs/protocol.md, Reloading entitlements): a
user's totals count only the rows they may see, so when their entitlement filter changes, each of
their aggregated subscriptions moves to the aggregation of its new gate (shared, or made by one
pass), and the client is sent the difference: groups that changed in full (or as deltas), new
groups in full, groups that no longer exist with an OOF ``entitlement``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..aggregate.view import Aggregation, aggregation_for
from ..filters.entitlement import ENTITLEMENT
from .aggregating import group_history

if TYPE_CHECKING:
    from ..broker.broker import Broker
    from ..fanout.subscription import Message, Subscription
    from ..session.session import Session


def regroup(broker: Broker, session: Session, subscription: Subscription) -> bool:
    """Move an aggregated ``subscription`` to the aggregation of its user's gate now; whether it moved."""
    groups = subscription.topic_ref
    view = groups.origin
    source = broker.topics.get(subscription.topic)
    if not isinstance(view, Aggregation) or source is None:
        return False
    gate = session.entitlement(subscription.topic, broker.clock)
    was = view.entitlement.filter
    now = gate.filter
    if (was.text if was is not None else None) == (now.text if now is not None else None):
        return False
    history = group_history(broker, source)
    ctx = subscription.ctx  # the user being moved: their USER() in the gate, not the creator's
    moved = aggregation_for(source, view.spec, view.filters, gate, ctx, broker.tx_frames, history)
    target = moved.topic
    before = groups.records
    window = subscription.window
    held = list(window.sowkeys()) if window is not None else list(before)
    groups.remove(subscription)
    if not groups.subscribers:
        view.release()
    target.add(subscription)
    after = target.records
    keys = dict.fromkeys([*held, *(subscription.window.sowkeys() if subscription.window else after)])
    changes: list[tuple[str, Message]] = []
    for key in keys:
        old, new = before.get(key), after.get(key)
        if old is not None and new is not None and key in held and old.data == new.data:
            continue  # the client has it already
        change = subscription.on_change(key, old, new, {}, ENTITLEMENT)
        if change is not None:
            changes.append((key, change))
    for key, change in changes:
        target.deliver(session, (subscription,), key, change, timed=False)
    target.counting.settle([subscription])  # option count: the number of groups of the new gate
    return True
