"""Bookmark replay (docs/protocol.md, Durability): the log read back to a subscription, then the seam to live.

The runtime reads the log (the transaction log on disk, or a cluster's Redis stream) and hands
the entries here in order (``replay``); when it has caught up, ``finish`` sends ``completed`` and
the live changes that waited; when the log cannot be read, ``abort`` ends the subscription rather
than let it go live with a gap.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..broker.bookmarks import ReplayRequest
from ..protocol import wire
from ..records.version import RecordVersion
from ..sow.txlog import DELETE, EXPIRE, PUBLISH, TX, LogEntry, transaction_changes

if TYPE_CHECKING:
    from ..broker.broker import Broker


def replay(
    broker: Broker, request: ReplayRequest, entries: list[LogEntry], full: Callable[[], bool] = lambda: False
) -> int:
    """Deliver log entries read back for a bookmark subscription (in log order), stopping early
    once ``full()`` says its socket has enough queued; how many were delivered (the runtime
    hands the rest again once the socket has taken some)."""
    subscription = request.subscription
    topic = subscription.topic_ref
    if subscription.closed or topic is None:
        return len(entries)
    done = 0
    for entry in entries:
        if full():
            break
        done += 1
        if entry.op == TX:  # replayed whole, between tx_begin and tx_end (docs/protocol.md, Transactions)
            changes = [change for change in transaction_changes(entry) if change.topic == topic.name]
            if changes:
                broker.tx_frames.begin(str(entry.lsn))
                try:
                    for change in changes:
                        _replay_one(request, change)
                finally:
                    broker.tx_frames.end()
        elif entry.topic == topic.name:
            _replay_one(request, entry)
    broker.settle()
    return done


def _replay_one(request: ReplayRequest, entry: LogEntry) -> None:
    subscription = request.subscription
    topic = subscription.topic_ref
    key = entry.key
    if entry.op == PUBLISH:
        new = RecordVersion(key, entry.data, entry.lsn, entry.timestamp, entry.expires_at)
        old = request.state.get(key)
        if subscription.held is not None or subscription.interval is not None:
            # Only these can be sent anything about a replayed delete (an OOF of a record held,
            # or a change folded over its interval): for the others the last version of every
            # record replayed would be a copy of the topic kept for nothing while the replay runs.
            request.state[key] = new
        change = subscription.replayed(key, old, new, {})
    elif entry.op in (DELETE, EXPIRE):
        last = request.state.pop(key, None)
        if last is None:
            return
        # The OOF body is the last state, positioned (bm) at the delete.
        old = RecordVersion(key, last.data, entry.lsn, entry.timestamp, None)
        change = subscription.replayed(key, old, None, {}, "expired" if entry.op == EXPIRE else "deleted")
    else:
        return
    if change is not None:  # an old change, sent now: no measure of latency
        topic.deliver(subscription.session, (subscription,), key, change, timed=False)


def abort(broker: Broker, request: ReplayRequest, reason: str) -> None:
    """The log could not be read back: end the subscription (its client is told) rather than
    let it go live with a gap."""
    subscription = request.subscription
    if subscription.closed:
        return
    session = subscription.session
    if session.subscriptions.get(subscription.sub_id) is subscription:
        del session.subscriptions[subscription.sub_id]
    broker.unsubscribe(subscription)
    subscription.replay_buffer.clear()
    session.send(wire.unsubscribed(subscription.sub_id, reason))
    broker.settle()


def finish(broker: Broker, request: ReplayRequest) -> None:
    """The replay caught up: completed (with bm), then the live changes that waited for it."""
    subscription = request.subscription
    if subscription.closed:
        return
    session, topic = subscription.session, subscription.topic_ref
    if request.wants_completed:
        session.send(wire.ack("completed", request.cid, bm=str(request.until_lsn)))
    subscription.replaying = False
    waiting, subscription.replay_buffer = subscription.replay_buffer, []
    for key, old, new, gone in waiting:
        change = subscription.replayed(key, old, new, {}, gone)
        if change is not None:
            topic.deliver(session, (subscription,), key, change)
    broker.settle()
