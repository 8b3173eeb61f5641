"""Resuming a view (docs/protocol.md, Resuming a view): instead of the whole snapshot, only the net
change of the view since the client's bookmark.

From the topic's history (sow/history.py), every record changed after the bookmark: the ones in the
view now are sent in full (``sow``), the ones that were in it then and are not now get an
``oof`` with the reason they left, and nothing is sent for the rest. The work is proportional to
what changed, plus one pass over the view for subscriptions that must know what the client holds
(delta and ``oof`` subscriptions: the client holds every record of the view).

Like a plain snapshot, a resume is decided when it is subscribed and encoded as the socket's
writer drains it (querying.py queues both the same way): ``NetChange`` holds one reference to an
immutable record version per message (and, for an OOF, its reason and the version the client
held), never an encoded body, so a socket that does not read holds no more than its snapshot would.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from ..protocol import wire
from ..queue.snapshots import record_message

if TYPE_CHECKING:
    from ..broker.broker import Broker
    from ..fanout.subscription import Subscription
    from ..fanout.topic import Topic
    from ..records.version import RecordVersion


def resume_point(broker: Broker, topic: Topic, bookmark: str | None, window: bool) -> int | None:
    """The LSN a ``resume`` subscription resumes after, or None: it gets the whole snapshot
    (no bookmark, a malformed or unknown one, one older than the history holds, or a window,
    whose edges a net change does not describe)."""
    if bookmark is None or window or not (bookmark.isascii() and bookmark.isdigit()):
        return None
    history = topic.sow.history
    lsn = int(bookmark)
    if history is None or not history.holds(lsn):
        return None
    if lsn and broker.changes.not_in_log(topic.name, lsn) is not None:
        return None  # issued by no one, or lost in a crash: the client may hold what we lost
    return lsn


class NetChange:
    """The messages of a resumed snapshot, decided at the subscribe and encoded one by one
    (``message``) as the writer drains them. ``versions`` is the version each message is about,
    in the order of the records' first change after the bookmark: the record as it is now for a
    ``sow``, or for an ``oof`` the version it left with (its state now, or the one its delete or
    expiry removed). ``leaving`` holds the OOFs by index: how the record left (``deleted`` or
    ``expired``; None when it still exists, and the reason is decided with its body) and the
    version the client held at the bookmark. Versions are immutable: what is sent is the view
    as it was at the subscribe, whatever happens to the records before the writer gets to them."""

    __slots__ = ("leaving", "versions")

    def __init__(self) -> None:
        self.versions: list[RecordVersion] = []
        self.leaving: dict[int, tuple[str | None, RecordVersion]] = {}

    def __len__(self) -> int:
        return len(self.versions)

    def message(self, subscription: Subscription, head: bytes, index: int) -> bytes | None:
        """Message ``index``, encoded (None: a record that cannot be encoded, left out)."""
        version = self.versions[index]
        left = self.leaving.get(index)
        if left is None:
            return record_message(head, partial(subscription.body_of, version.key, version))
        gone, then = left
        return record_message(
            subscription.message_head(wire.OOF_COMMAND), partial(_oof_body, subscription, version, gone, then)
        )


def _oof_body(
    subscription: Subscription, version: RecordVersion, gone: str | None, then: RecordVersion
) -> bytes:
    """The body of the OOF of a record that was in the view at the bookmark (as ``then``) and
    left it (as ``version``): by the rules of any OOF (``oof_message``: a body the user may see)."""
    reason = gone if gone is not None else subscription.left_because(version)
    change = subscription.oof_message(version.key, version, reason, subscription.view_of(then), {})
    assert change is not None  # the view held at the bookmark is a record: there is a body to send
    return change[1]


def net_change(topic: Topic, subscription: Subscription, after: int) -> NetChange:
    """The net change of ``subscription``'s view since LSN ``after``, as of now."""
    history = topic.sow.history
    assert history is not None
    records = topic.records
    if subscription.held is not None:
        # The client holds the whole view as it is now, once these messages are applied.
        for version in records.values():
            if subscription.in_view(version.key, version.data):
                subscription.remember(version.key, subscription.view_of(version))
    # Without a filter (nor an entitlement filter) every record is in the view: a compact
    # version need not be decoded to be asked (as a plain snapshot's selection does).
    unfiltered = subscription.unfiltered
    net = NetChange()
    versions, leaving = net.versions, net.leaving
    for key, then in history.since(after).items():
        now = records.get(key)
        if now is not None and (unfiltered or subscription.in_view(key, now.data)):
            versions.append(now)
        elif then.old is not None and (unfiltered or subscription.in_view(key, then.old.data)):
            if now is None:
                assert then.removed is not None
                leaving[len(versions)] = (then.gone or "deleted", then.old)
                versions.append(then.removed)
            else:
                leaving[len(versions)] = (None, then.old)
                versions.append(now)
    return net
