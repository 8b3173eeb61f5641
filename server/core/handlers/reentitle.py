"""Entitlements that move (docs/protocol.md, Reloading entitlements): after ``[auth]`` is reloaded,
every live socket and subscription is re-decided at once, as if each of its records had changed.

- A socket whose user no longer exists is closed with 1008. So is one that logged on (or
  subscribed) while there was no ``[auth]`` when there is one now: it never authenticated. A
  socket whose user's password changed keeps going (it did authenticate); new logons use the new
  password.
- A subscription to a topic the user may no longer read ends with ``unsubscribed``, reason
  ``entitlement``.
- A subscription whose entitlement filter changed takes the new gate (``Topic.regate``: its lane,
  index entry and window order follow), then every record whose place in its view flipped is
  re-decided by the one path every change takes (``Subscription.on_change`` with the record
  changed to itself): a record that left gets the OOF the publish path would send (``entitlement``,
  body the last state the user was allowed to see; ``match`` for one a window pushed out; nothing
  without ``oof``), a record that entered is sent in full. Records whose place did not change get
  nothing. Subscription conflation and hidden views defer these like any change.
- Resume points (docs/protocol.md, Resuming a view) end on every topic that some user now reads
  through another gate: a bookmark from before the reload gets the whole snapshot (``resumed:
  false``), since the topic's history of changes knows nothing of records that entered or left by
  the reload.

Cost: a re-gated subscription reads every record of its topic once or twice (its view before and
after); subscriptions whose entitlement did not change cost nothing. It all runs synchronously,
inside one unit of work.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..fanout.windows import in_position_order
from ..filters.entitlement import ENTITLEMENT
from ..protocol import wire
from ..session.session import CLOSE_POLICY
from .aggregating import is_aggregated
from .regrouping import regroup

if TYPE_CHECKING:
    from ..broker.broker import Broker
    from ..fanout.subscription import Message, Subscription
    from ..fanout.topic import Topic
    from ..filters.entitlement import Entitlement
    from ..session.session import Session
    from ..settings.config import UserConfig


@dataclass(slots=True)
class Reentitled:
    """What a reload changed, for the log line that reports it."""

    closed: int = 0  # sockets closed with 1008
    ended: int = 0  # subscriptions ended: their topic may no longer be read
    regated: int = 0  # subscriptions whose entitlement filter changed


def reentitle(broker: Broker, previous: Mapping[str, UserConfig] | None) -> Reentitled:
    """Re-decide every socket against ``broker.config.users`` (the broker's own, just reloaded
    from ``previous``)."""
    for topic in _moved(broker, previous):
        history = topic.sow.history
        if history is not None:
            # A view resumed from an earlier bookmark would be the net change under the new gates
            # alone: records that entered or left by the reload would be missed (docs/protocol.md,
            # Resuming a view).
            history.reset(broker.changes.applied_position(topic.name) + 1)
    done = Reentitled()
    for session in list(broker.sessions.values()):
        if session.close_code is None:
            _reauthorize(broker, session, done)
    return done


def _reauthorize(broker: Broker, session: Session, done: Reentitled) -> None:
    users = broker.config.users
    if users is None:
        user = None  # no [auth]: anyone may do anything
    elif session.user is not None:
        user = users.get(session.user.user_id)
        if user is None:
            _close(broker, session, "not entitled: the user no longer exists", done)
            return
    elif session.logged_on or session.subscriptions:
        _close(broker, session, "not entitled: logon required", done)
        return
    else:
        return  # not logged on yet: its logon is checked against the new users
    session.reauthorize(user)
    moved: dict[Topic, list[Subscription]] = {}
    for subscription in list(session.subscriptions.values()):
        if subscription.closed or subscription.dropped:
            continue
        if user is not None and not user.may_read(subscription.topic):
            _end(broker, session, subscription)
            done.ended += 1
        elif is_aggregated(subscription):
            done.regated += regroup(broker, session, subscription)
        elif _gate(session.entitlement(subscription.topic, broker.clock)) != _gate(subscription.entitlement):
            moved.setdefault(subscription.topic_ref, []).append(subscription)
            done.regated += 1
    for topic, subscriptions in moved.items():
        _redecide(topic, session, subscriptions, session.entitlement(topic.name, broker.clock))


def _moved(broker: Broker, previous: Mapping[str, UserConfig] | None) -> list[Topic]:
    """The topics some user who was there (connected or not, with bookmarks of their views) now
    reads through another gate, newly reads, or no longer reads. A user new to ``[auth]`` holds no
    bookmark: one removed before had them all ended then."""
    users = broker.config.users
    if previous is None or users is None:
        return [] if previous is users else list(broker.topics.values())
    return [
        topic
        for name, topic in broker.topics.items()
        if any(_rows(user, name) != _rows(users.get(user_id), name) for user_id, user in previous.items())
    ]


def _rows(user: UserConfig | None, topic: str) -> tuple[bool, str | None]:
    """Which rows of ``topic`` ``user`` reads: whether any, and through which filter."""
    if user is None or not user.may_read(topic):
        return False, None
    return True, user.filters.get(topic) or None


def _gate(entitlement: Entitlement) -> str | None:
    """What decides an entitlement (its user and client name never change on a socket)."""
    return entitlement.filter.text if entitlement.filter is not None else None


def _close(broker: Broker, session: Session, reason: str, done: Reentitled) -> None:
    session.request_close(CLOSE_POLICY, reason)
    broker.close_session(session)
    done.closed += 1


def _end(broker: Broker, session: Session, subscription: Subscription) -> None:
    if session.subscriptions.get(subscription.sub_id) is subscription:
        del session.subscriptions[subscription.sub_id]
    broker.unsubscribe(subscription)
    session.send(wire.unsubscribed(subscription.sub_id, ENTITLEMENT))


def _redecide(topic: Topic, session: Session, subscriptions: list[Subscription], gate: Entitlement) -> None:
    """Give ``subscriptions`` (of ``session``, on ``topic``) the new gate and send what it changes:
    OOFs first, then entries. Subscriptions other than windows are asked together, record by record,
    so that one message names every subscription whose message is the same (docs/protocol.md,
    Messages from the server); a window's messages go in its own order (with ``positions``, the
    order their ``pos`` needs)."""
    records = topic.records
    left: dict[str, list[Subscription]] = {}  # record -> the subscriptions it left
    entered: dict[str, list[Subscription]] = {}
    for subscription in subscriptions:
        # What the client holds: what the subscription remembers sending, or else its view.
        before = list(subscription.held) if subscription.held is not None else _view(topic, subscription)
        topic.regate(subscription, gate)
        after = _view(topic, subscription)
        was, now = set(before), set(after)
        # (A record deleted but still held waits for its interval: the delete's OOF is owed.)
        gone = [key for key in before if key not in now and key in records]
        came = [key for key in after if key not in was]
        if subscription.window is None:
            for keys, into in ((gone, left), (came, entered)):
                for key in keys:
                    into.setdefault(key, []).append(subscription)
            continue
        changes: list[tuple[str, Message]] = []
        for key in (*gone, *came):
            change = subscription.on_change(key, records[key], records[key], {})
            if change is not None:
                changes.append((key, change))
        for key, change in in_position_order(subscription.window, subscription.positions, changes):
            topic.deliver(session, (subscription,), key, change, timed=False)
    for moved in (left, entered):
        for key, members in moved.items():
            topic.recheck(session, members, key)
    topic.counting.settle(subscriptions)  # option count: after the records that moved


def _view(topic: Topic, subscription: Subscription) -> list[str]:
    """The records in ``subscription``'s view now, in its order (a window's, or the SOW's)."""
    window = subscription.window
    if window is not None:
        return window.sowkeys()
    matches = subscription.matches
    return [key for key, version in topic.records.items() if matches(version.data)]
