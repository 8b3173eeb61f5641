"""The reference for a resumed snapshot: how handlers/resuming.py computed it before it was made lazy,
every message encoded at the subscribe (kept as it was, as the oracle of test_resume_lazy.py)."""

from __future__ import annotations

from functools import partial

from server.core.fanout.subscription import Subscription
from server.core.fanout.topic import Topic
from server.core.protocol import wire
from server.core.queue.snapshots import record_message


def eager_resume(
    topic: Topic, subscription: Subscription, after: int, snapshot_head: bytes
) -> list[tuple[str, bytes]]:
    """The messages of a resumed snapshot, with their records' keys: the view's net change since
    LSN ``after``."""
    history = topic.sow.history
    assert history is not None
    records = topic.records
    if subscription.held is not None:
        for version in records.values():
            if subscription.in_view(version.key, version.data):
                subscription.remember(version.key, subscription.view_of(version))
    out: list[tuple[str, bytes]] = []
    for key, then in history.since(after).items():
        now = records.get(key)
        if now is not None and subscription.in_view(key, now.data):
            render = partial(subscription.body_of, key, now)
            message = record_message(snapshot_head, render)
        elif then.old is not None and subscription.in_view(key, then.old.data):
            previous = subscription.view_of(then.old)
            if now is None:
                assert then.removed is not None
                change = subscription.oof_message(key, then.removed, then.gone or "deleted", previous, {})
            else:
                change = subscription.oof_message(key, now, subscription.left_because(now), previous, {})
            oof_head = subscription.message_head(wire.OOF_COMMAND)
            message = None if change is None else wire.join(oof_head, change[1])
        else:
            continue
        if message is not None:
            out.append((key, message))
    return out
