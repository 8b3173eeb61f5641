"""Resuming a view (PROTOCOL 11.1): instead of the whole snapshot, only the net change of the
view since the client's bookmark.

From the topic's history (history.py), every record changed after the bookmark: the ones in the
view now are sent in full (``sow``), the ones that were in it then and are not now get an
``oof`` with the reason they left, and nothing is sent for the rest. The work is proportional to
what changed, plus one pass over the view for subscriptions that must know what the client holds
(delta and ``oof`` subscriptions: the client holds every record of the view).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from . import wire
from .snapshots import record_message

if TYPE_CHECKING:
    from .engine import Engine
    from .subscription import Subscription
    from .topic import Topic


def resume_point(engine: Engine, topic: Topic, bookmark: str | None, window: bool) -> int | None:
    """The LSN a ``resume`` subscription resumes after, or None: it gets the whole snapshot
    (no bookmark, a malformed or unknown one, one older than the history holds, or a window,
    whose edges a net change does not describe)."""
    if bookmark is None or window or not (bookmark.isascii() and bookmark.isdigit()):
        return None
    history = topic.sow.history
    lsn = int(bookmark)
    if history is None or not history.holds(lsn):
        return None
    if lsn and engine.not_in_log(topic.name)(lsn) is not None:
        return None  # issued by no one, or lost in a crash: the client may hold what we lost
    return lsn


def resume(
    topic: Topic, subscription: Subscription, after: int, snapshot_head: bytes
) -> list[tuple[str, bytes]]:
    """The messages of a resumed snapshot, with their records' keys: the view's net change since
    LSN ``after``."""
    history = topic.sow.history
    assert history is not None
    records = topic.records
    if subscription.held is not None:
        # The client holds the whole view as it is now, once these messages are applied.
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
            message = None if change is None else wire.join(subscription.heads[wire.OOF], change[1])
        else:
            continue
        if message is not None:
            out.append((key, message))
    return out
