"""Aggregated queries: ``sow``, ``sow_and_subscribe`` and ``sow_and_delta_subscribe`` with
``grouping`` or ``projection`` (docs/protocol.md, Aggregated views).

An aggregated subscription is an ordinary subscription to the topic of groups of its aggregation
(aggregate/view.py), with no filter and no entitlement of its own: those selected the groups'
input records already. So its snapshot, window, resume and replace are querying.py's, applied
to the topic of groups. A one-shot ``sow`` reads the groups of a shared aggregation when there is
one, and otherwise computes them over the filtered records and drops them.
"""

from __future__ import annotations

import math
from functools import partial
from typing import TYPE_CHECKING, Any

import orjson

from ..aggregate.parse import parse_aggregation
from ..aggregate.view import Aggregation, GroupTopic, aggregation_for, share_of
from ..errors import BAD_MESSAGE, INVALID_OPTIONS, INVALID_TOPIC, SUBID_IN_USE, CommandError
from ..fanout.subscription import Subscription
from ..filters import parse_orderby
from ..filters.entitlement import Entitlement
from ..filters.functions import EvalContext
from ..protocol import wire
from ..protocol.commands import Header, Query
from ..session.quota import admit_filter_pass, admit_subscription, admit_window
from ..sow.history import History
from .acks import ack, processed, received
from .querying import _filters, _replace, _send_snapshot, _snapshot, _window_spec
from .resuming import net_change, resume_point

if TYPE_CHECKING:
    from ..broker.broker import Broker
    from ..fanout.topic import Topic
    from ..session.session import Session


def is_aggregated(subscription: Subscription | None) -> bool:
    """Whether ``subscription`` is an aggregated view's."""
    return subscription is not None and isinstance(subscription.topic_ref, GroupTopic)


def handles(session: Session, body: Query) -> bool:
    """Whether this module answers ``body``: an aggregated query, or a ``replace`` of an
    aggregated subscription (refused unless it is aggregated too)."""
    if body.aggregated:
        return True
    return body.subscribe and body.options.replace and is_aggregated(session.subscriptions.get(body.sub_id))


def query(broker: Broker, session: Session, header: Header, body: Query) -> None:
    session.check_read(body.topic)
    if not body.aggregated:
        raise CommandError(INVALID_OPTIONS, "replace keeps the kind of view: this sub_id is aggregated")
    if not body.snapshot:
        raise CommandError(
            INVALID_OPTIONS,
            "grouping and projection are for sow, sow_and_subscribe and sow_and_delta_subscribe",
        )
    admit_subscription(session, body, broker.config.server.max_subscriptions)
    source = broker.topics.get(body.topic)
    if source is None or not source.is_sow:
        raise CommandError(INVALID_TOPIC, f"{body.topic!r} has no SOW (it is not a configured topic)")
    if body.bookmark is not None and not body.options.resume:
        raise CommandError(BAD_MESSAGE, "bm is for subscribe and delta_subscribe")
    spec = parse_aggregation(
        list(body.grouping) if body.grouping is not None else None,
        list(body.projection) if body.projection is not None else None,
    )
    filters = _filters(body.filter)
    entitlement = session.entitlement(body.topic, broker.clock)
    orderby = parse_orderby(body.orderby) if body.orderby else None
    ctx = EvalContext(broker.clock, session.user_id, session.client_name)
    existing = session.subscriptions.get(body.sub_id) if body.subscribe else None
    if existing is not None and not body.options.replace:
        raise CommandError(SUBID_IN_USE, f"sub_id {body.sub_id!r} is already subscribed on this connection")
    if existing is not None and (existing.topic != body.topic or not is_aggregated(existing)):
        raise CommandError(
            INVALID_OPTIONS,
            f"replace keeps the topic and the kind of view: sub_id {body.sub_id!r} is another",
        )
    shared = source.derived.get(share_of(spec, filters, entitlement, ctx))
    if shared is None:
        admit_filter_pass(body.filter, len(source.records))  # the groups are made by one pass
    ungated = Entitlement(body.topic, None, ctx)  # the inputs were gated: the groups are the user's
    if not body.subscribe:
        # A one-shot sow: the shared state's groups, or groups made for it alone and dropped.
        if not isinstance(shared, Aggregation):
            shared = Aggregation(source, (), spec, filters, entitlement, ctx, broker.tx_frames, live=False)
        received(session, header)
        processed(session, header)
        reader = Subscription(session, None, body.topic, (), body.options, False, None, ctx, ungated)
        _end(session, header, *_snapshot(shared.topic, session, body, reader, orderby, None))
        return
    history = group_history(broker, source) if shared is None else None
    view = aggregation_for(source, spec, filters, entitlement, ctx, broker.tx_frames, history)
    groups = view.topic
    try:
        window = _window_spec(body, orderby, groups)
        subscription = Subscription(
            session, body.sub_id, body.topic, (), body.options, body.delta, groups.key_spec, ctx, ungated
        )
        subscription.schedule = broker.timers.schedule
        if window is not None:
            subscription.hold_window(window)
            admit_window(
                groups,
                subscription,
                existing if existing is not None and existing.topic_ref is groups else None,
            )
    except CommandError:
        if not groups.subscribers:
            view.release()  # made for this command alone
        raise
    if body.options.resume:
        subscription.bookmark()
    if session.hidden_interval is not None:
        subscription.hide(session.hidden_interval)
    received(session, header)
    processed(session, header)
    if existing is not None and existing.topic_ref is groups:
        _replace(groups, existing, subscription, True)
    elif existing is not None:
        _switch(broker, existing, subscription, groups)
    else:
        groups.add(subscription)
    session.subscriptions[body.sub_id] = subscription
    if body.options.resume:
        matches, returned = _resume(broker, groups, session, body, subscription, orderby)
    else:
        matches, returned = _snapshot(groups, session, body, subscription, orderby, subscription)
    _end(session, header, matches, returned)


def _resume(
    broker: Broker, groups: Topic, session: Session, body: Query, subscription: Subscription, orderby: Any
) -> tuple[int, int]:
    """A ``resume`` of an aggregated view (docs/protocol.md, Aggregated views): the net change of
    its groups since the bookmark while its state's history holds it, else every group;
    ``group_end`` carries the position to resume from next time and whether it resumed."""
    fields: dict[str, Any] = {"bm": str(broker.changes.applied_position(groups.name))}
    after = resume_point(broker, groups, body.bookmark, subscription.window_spec is not None)
    if body.bookmark is not None:
        fields["resumed"] = after is not None
    if after is None:
        return _snapshot(groups, session, body, subscription, orderby, subscription, fields)
    head = wire.snapshot_head(groups.name_json, orjson.dumps(body.query_id))
    net = net_change(groups, subscription, after)
    _send_snapshot(
        groups, session, body, head, net.versions, partial(net.message, subscription, head), fields
    )
    return len(net), len(net)


def group_history(broker: Broker, source: Topic) -> History | None:
    """The history a new aggregation's topic of groups keeps (when its source keeps one): every
    change from now on, so a view resumes from any bookmark it was sent while the aggregation
    lived; a bookmark from before gets the groups in full (``resumed: false``)."""
    if source.sow.history is None:
        return None
    settings = broker.config.server
    return History(
        settings.resume_history_changes,
        settings.resume_history_s,
        settings.resume_history_bytes,
        broker.changes.applied_position(source.name),
    )


def _end(session: Session, header: Header, matches: int, returned: int) -> None:
    if header.wants("stats"):
        ack(session, header, "stats", matches=matches, records_returned=returned)
    if header.wants("completed"):
        ack(session, header, "completed")


def _switch(broker: Broker, old: Subscription, new: Subscription, groups: Topic) -> None:
    """A ``replace`` onto another aggregation (another filter, grouping or projection): what the
    old one owed goes first, the groups the client held leave (an OOF ``match`` when either asked
    for OOFs: they are groups of another view), and the new view's snapshot follows."""
    before = old.topic_ref
    owed, tx = old.release(math.inf)
    with old.session.tx_frames.whole(tx):
        for _, key, change in owed:
            before.deliver(old.session, (old,), key, change)
    if (old.options.oof or new.options.oof) and old.held is not None:
        for key, held in list(old.held.items()):
            version = before.records.get(key)
            if version is not None:
                message = old.oof_message(key, version, "match", held, {})
                if message is not None:
                    before.deliver(old.session, (new,), key, message, timed=False)
    broker.unsubscribe(old)  # its aggregation goes with its last subscriber
    old.successor = new
    groups.add(new)
