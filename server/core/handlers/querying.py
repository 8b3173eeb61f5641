"""``sow`` queries, the four subscribe commands and ``unsubscribe``.

One path for every query: first which topic it reads (the topic, through the subscription's
filter and the user's entitlement; or, for an aggregated query, the topic of groups of its
aggregation: aggregating.py), then, the same for both, its window, what it may cost, its
subscription, its answer (a snapshot, a resume's net change, a viewport's move or a
``replace``), ``count`` and its acks.

A ``sow_and_*`` command takes its snapshot and registers its subscription inside one
synchronous call, so no publish can fall between them: publishes that arrive while the
snapshot is being written out are queued behind it (after ``group_end``), none lost, none twice.
The snapshot's messages are encoded lazily as the socket's writer drains them (snapshotting.py).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from ..aggregate.view import Aggregation
from ..broker.bookmarks import Bookmark, ReplayRequest, check_bookmark, parse_bookmark
from ..errors import BAD_MESSAGE, INVALID_OPTIONS, INVALID_TOPIC, SUBID_IN_USE, CommandError
from ..fanout.subscription import Subscription
from ..fanout.topic import Topic
from ..fanout.windows import WindowSpec
from ..filters import Filter, compile_filter, parse_orderby
from ..filters.entitlement import Entitlement
from ..filters.functions import EvalContext
from ..filters.orderby import OrderBy, sowkey_order
from ..limits import MAX_WINDOW_ROWS
from ..protocol.commands import Header, Query, Unsubscribe
from ..session.quota import (
    admit_aggregated_view,
    admit_pass,
    admit_replace_pass,
    admit_subscription,
    admit_window,
)
from ..settings.unkept import Unkept, no_sow
from .acks import ack, processed, received
from .aggregating import check_kind, groups_for
from .moving import move, moves
from .replacing import replace, switch
from .snapshotting import resumable, snapshot

if TYPE_CHECKING:
    from ..broker.broker import Broker
    from ..session.session import Session

PLAIN_VIEW = "nothing is stored: the snapshot is empty and only live publishes arrive"


def own_filters(text: str | None) -> tuple[Filter, ...]:
    """The subscription's own filter (the user's entitlement is a separate gate: filters/entitlement.py)."""
    return (compile_filter(text),) if text is not None and text.strip() else ()


def query(broker: Broker, session: Session, header: Header, body: Query) -> None:
    session.check_read(body.topic)
    existing = session.subscriptions.get(body.sub_id) if body.subscribe else None
    check_kind(body, existing)
    admit_subscription(session, body, broker.config.server.max_subscriptions)
    known = broker.topics.get(body.topic)
    unkept = broker.kept.unkept(body.topic)  # None: kept (or the server keeps none)
    if header.c == "sow" and not body.aggregated and (known is None or not known.is_sow):
        raise no_sow(body.topic, unkept)
    resuming = body.options.resume
    for flag, name in ((resuming, "resume"), (body.options.count, "count")):
        if flag and not (body.snapshot and body.subscribe):
            raise CommandError(
                INVALID_OPTIONS, f"{name} is for sow_and_subscribe and sow_and_delta_subscribe"
            )
    bookmark = _bookmark(broker, header, body, known, unkept)
    if existing is not None and not body.options.replace:
        raise CommandError(SUBID_IN_USE, f"sub_id {body.sub_id!r} is already subscribed on this connection")
    if existing is not None and existing.topic != body.topic:
        raise CommandError(
            INVALID_OPTIONS, f"replace keeps the topic: sub_id {body.sub_id!r} is on {existing.topic!r}"
        )
    filters = own_filters(body.filter)
    entitlement = session.entitlement(body.topic, broker.clock)
    orderby = parse_orderby(body.orderby) if body.orderby else None
    ctx = EvalContext(broker.clock, session.user_id, session.client_name)
    window = window_spec(body, orderby, body.aggregated or (known is not None and known.is_sow), unkept)
    # Which topic it reads, through which gates: validated, so only now may a plain topic come
    # into being (for a subscription to hold it), or an aggregation be made.
    made: Aggregation | None = None
    topic: Topic
    pass_filter = body.filter  # what a snapshot evaluates over the topic's records
    if body.aggregated:
        topic, made = groups_for(broker, body, known, filters, entitlement, ctx)
        filters, entitlement, pass_filter = (), Entitlement(body.topic, None, ctx), None
    elif known is not None:
        topic = known
    else:
        topic = broker.topic(body.topic) if body.subscribe else Topic(body.topic, None, broker.run)
    try:
        subscription = _subscription(broker, session, body, topic, filters, entitlement, ctx, window)
        if subscription is not None and window is not None:
            admit_window(broker.topics.values(), topic, subscription, existing)
        if subscription is not None and body.aggregated:
            admit_aggregated_view(session, topic, existing)
        if body.snapshot and topic.is_sow and not topic.has_order(subscription):
            # One pass of the filter over the topic (a resume's too: it reads the whole topic when
            # its history does not reach back; a window over an order that exists already reads
            # the order).
            admit_pass(pass_filter, orderby, window is not None or orderby is not None, len(topic.records))
        if (
            existing is not None
            and subscription is not None
            and existing.topic_ref is topic
            and not moves(existing, subscription, body)
        ):
            admit_replace_pass(existing, subscription, len(topic.records))
    except CommandError:
        if made is not None and not made.topic.subscribers:
            made.release()  # made for this command alone
        raise
    if subscription is not None and (bookmark is not None or resuming):
        subscription.bookmark()
        subscription.replaying = bookmark is not None and not bookmark.live_only
    if subscription is not None and session.hidden_interval is not None:
        subscription.hide(session.hidden_interval)  # its snapshot goes now, its changes wait
    # A topic the server does not keep is plain pub/sub: the subscription stands, and its acks
    # and group_end say so, with the kept names close to it (docs/protocol.md, Topics the
    # server does not keep).
    warning = unkept.warning(PLAIN_VIEW) if unkept is not None and not body.aggregated else {}
    received(session, header)
    processed(session, header, **warning)
    moved: tuple[int, int] | None = None
    if existing is not None and subscription is not None and moves(existing, subscription, body):
        moved = move(topic, session, body, existing, subscription, broker.unsubscribe)  # a viewport moves
    elif existing is not None and subscription is not None and existing.topic_ref is not topic:
        switch(broker, existing, subscription, topic)  # onto another aggregation
    elif existing is not None and subscription is not None:
        replace(topic, existing, subscription, body.snapshot)
    elif subscription is not None:
        topic.add(subscription)
    if subscription is not None:
        session.subscriptions[body.sub_id] = subscription
    if body.snapshot:
        views = (ctx, entitlement, filters)
        _answer(broker, topic, session, header, body, subscription, orderby, moved, *views, warning)
    _completed(broker, topic, session, header, subscription, bookmark)


def _bookmark(
    broker: Broker, header: Header, body: Query, known: Topic | None, unkept: Unkept | None
) -> Bookmark | None:
    """The bookmark a ``subscribe`` replays from (a resume's ``bm`` is read by resuming.py)."""
    if body.bookmark is None or body.options.resume:
        return None
    if header.c not in ("subscribe", "delta_subscribe"):
        raise CommandError(BAD_MESSAGE, "bm is for subscribe and delta_subscribe")
    bookmark = parse_bookmark(body.bookmark)
    durable = known is not None and known.durable
    if not bookmark.live_only and not durable:
        why = f": it is not a configured topic; {unkept.hint}" if unkept is not None else ""
        raise CommandError(
            INVALID_TOPIC,
            f"{body.topic!r} keeps no transaction log to replay a bookmark from{why}",
            unkept.fields() if unkept is not None else None,
        )
    # A bookmark names one change forever, or is refused.
    check_bookmark(bookmark, partial(broker.changes.not_in_log, body.topic))
    return bookmark


def _subscription(
    broker: Broker,
    session: Session,
    body: Query,
    topic: Topic,
    filters: tuple[Filter, ...],
    entitlement: Entitlement,
    ctx: EvalContext,
    window: WindowSpec | None,
) -> Subscription | None:
    """The subscription a subscribe command makes (None: a one-shot ``sow``), not yet added."""
    if not body.subscribe:
        return None
    subscription = Subscription(
        session, body.sub_id, body.topic, filters, body.options, body.delta, topic.key_spec, ctx, entitlement
    )
    subscription.schedule = broker.timers.schedule
    if window is not None:
        subscription.hold_window(window)
    return subscription


def _answer(
    broker: Broker,
    topic: Topic,
    session: Session,
    header: Header,
    body: Query,
    subscription: Subscription | None,
    orderby: OrderBy | None,
    moved: tuple[int, int] | None,
    ctx: EvalContext,
    entitlement: Entitlement,
    filters: tuple[Filter, ...],
    warning: dict[str, Any],
) -> None:
    """The snapshot of a ``sow`` or ``sow_and_*`` (or a resume's net change, or a move's answer,
    queued already), then its ``stats`` ack; ``warning``'s fields go on its ``group_end``."""
    reader = subscription or Subscription(
        session, None, topic.name, filters, body.options, False, None, ctx, entitlement
    )
    counted = topic.counting.matches(subscription) if subscription is not None else None
    end = {"matches": counted or 0} if body.options.count else {}  # (a plain topic: always 0)
    end.update(warning)
    if moved is not None:
        matches, returned = moved
    elif body.options.resume and subscription is not None:
        window = subscription.window_spec
        matches, returned = resumable(broker, topic, session, body, subscription, orderby, window, end)
    else:
        matches, returned = snapshot(topic, session, body, reader, orderby, subscription, end)
    if header.wants("stats"):
        ack(session, header, "stats", matches=matches, records_returned=returned)


def _completed(
    broker: Broker,
    topic: Topic,
    session: Session,
    header: Header,
    subscription: Subscription | None,
    bookmark: Bookmark | None,
) -> None:
    if bookmark is not None and subscription is not None and not bookmark.live_only:
        # Replay first: the runtime reads the log, then completed (with bm), then live.
        request = ReplayRequest(
            subscription,
            bookmark,
            broker.changes.log_position(topic.name),
            header.cid,
            header.wants("completed"),
        )
        broker.request_replay(request)
    elif header.wants("completed"):
        fields = {"bm": str(broker.changes.log_position(topic.name))} if bookmark is not None else {}
        ack(session, header, "completed", **fields)


def window_spec(body: Query, orderby: OrderBy | None, sow: bool, unkept: Unkept | None) -> WindowSpec | None:
    """A live window (docs/protocol.md, Live windows) when a ``sow_and_*`` subscription of a SOW
    topic (or of groups) asks for ``top_n``; ``positions`` asks for one, and is refused for what
    is missing (``unkept``: the topic is not one the server keeps)."""
    if body.subscribe and body.snapshot and body.top_n is not None and sow:
        if body.top_n > MAX_WINDOW_ROWS:
            raise CommandError(
                INVALID_OPTIONS, f"top_n of a live window is at most {MAX_WINDOW_ROWS} (got {body.top_n})"
            )
        sort_key = orderby.sort_key if orderby is not None else sowkey_order
        return WindowSpec(orderby, sort_key, body.skip_n or 0, body.top_n)
    if body.options.positions:
        raise _no_window(body, unkept)
    return None


def _no_window(body: Query, unkept: Unkept | None) -> CommandError:
    """Why ``positions`` has no live window to number, in what the command sent: its topic, its
    command or its missing ``top_n``, in that order (a viewport's client adds ``positions``
    itself: its user never wrote it, but named the topic)."""
    if body.subscribe and body.snapshot and unkept is not None:
        return CommandError(
            INVALID_TOPIC,
            f"{body.topic!r} is not a configured topic, so it is plain pub/sub and keeps no records: "
            f"a viewport (top_n with positions) needs a configured topic; {unkept.hint}",
            unkept.fields(),
        )
    if not (body.subscribe and body.snapshot):
        what = "a sow" if body.snapshot else "a subscription without a snapshot"
        return CommandError(
            INVALID_OPTIONS,
            f"positions is for a live window, which {what} does not hold: "
            "sow_and_subscribe or sow_and_delta_subscribe with top_n",
        )
    if body.top_n is None:
        return CommandError(INVALID_OPTIONS, "positions is for a live window: give top_n with it")
    return CommandError(INVALID_TOPIC, f"{body.topic!r} has no SOW to hold a live window of (positions)")


def unsubscribe(broker: Broker, session: Session, header: Header, body: Unsubscribe) -> None:
    sub_ids = list(session.subscriptions) if body.sub_ids is None else body.sub_ids
    received(session, header)
    for sub_id in sub_ids:
        subscription = session.subscriptions.pop(sub_id, None)
        if subscription is None and isinstance(sub_id, str) and sub_id.isdigit():
            subscription = session.subscriptions.pop(int(sub_id), None)
        if subscription is not None:
            broker.unsubscribe(subscription)
    processed(session, header)
