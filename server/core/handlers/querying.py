"""``sow`` queries, the four subscribe commands and ``unsubscribe``.

A ``sow_and_*`` command takes its snapshot and registers its subscription inside one
synchronous call, so no publish can fall between them: publishes that arrive while the
snapshot is being written out are queued behind it (after ``group_end``), none lost, none twice.
The snapshot's messages are encoded lazily as the socket's writer drains them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from functools import partial
from typing import TYPE_CHECKING, Any

import orjson

from ..broker.bookmarks import ReplayRequest, check_bookmark, parse_bookmark
from ..errors import BAD_MESSAGE, INVALID_OPTIONS, INVALID_TOPIC, SUBID_IN_USE, CommandError
from ..fanout.subscription import Message, Subscription
from ..fanout.topic import Topic
from ..fanout.windows import WindowSpec
from ..filters import Filter, compile_filter, parse_orderby
from ..filters.functions import EvalContext
from ..filters.orderby import OrderBy, sowkey_order
from ..limits import MAX_WINDOW_ROWS
from ..protocol import wire
from ..protocol.commands import Header, Query, Unsubscribe
from ..queue.outbox import FRAME_BREAK
from ..queue.snapshots import SnapshotRecords, estimated_size, record_message
from ..records.version import RecordVersion
from ..session.quota import admit_filter_pass, admit_subscription, admit_window
from .acks import ack, processed, received
from .moving import move, moves
from .resuming import net_change, resume_point

if TYPE_CHECKING:
    from ..broker.broker import Broker
    from ..session.session import Session


def _filters(text: str | None) -> tuple[Filter, ...]:
    """The subscription's own filter (the user's entitlement is a separate gate: filters/entitlement.py)."""
    return (compile_filter(text),) if text is not None and text.strip() else ()


def query(broker: Broker, session: Session, header: Header, body: Query) -> None:
    session.check_read(body.topic)
    admit_subscription(session, body, broker.config.server.max_subscriptions)
    known = broker.topics.get(body.topic)
    if header.c == "sow" and (known is None or not known.is_sow):
        raise CommandError(INVALID_TOPIC, f"{body.topic!r} has no SOW (it is not a configured topic)")
    resuming = body.options.resume
    for flag, name in ((resuming, "resume"), (body.options.count, "count")):
        if flag and not (body.snapshot and body.subscribe):
            raise CommandError(
                INVALID_OPTIONS, f"{name} is for sow_and_subscribe and sow_and_delta_subscribe"
            )
    bookmark = None
    if body.bookmark is not None and not resuming:  # a resume's bm is read by resuming.py
        if header.c not in ("subscribe", "delta_subscribe"):
            raise CommandError(BAD_MESSAGE, "bm is for subscribe and delta_subscribe")
        bookmark = parse_bookmark(body.bookmark)
        durable = known is not None and known.durable
        if not bookmark.live_only and not durable:
            raise CommandError(
                INVALID_TOPIC, f"{body.topic!r} keeps no transaction log to replay a bookmark from"
            )
        # A bookmark names one change forever, or is refused.
        check_bookmark(bookmark, partial(broker.changes.not_in_log, body.topic))
    filters = _filters(body.filter)
    entitlement = session.entitlement(body.topic, broker.clock)
    orderby = parse_orderby(body.orderby) if body.orderby else None
    window = _window_spec(body, orderby, known)
    ctx = EvalContext(broker.clock, session.user_id, session.client_name)
    subscription = None
    existing = session.subscriptions.get(body.sub_id) if body.subscribe else None
    if existing is not None and not body.options.replace:
        raise CommandError(SUBID_IN_USE, f"sub_id {body.sub_id!r} is already subscribed on this connection")
    if existing is not None and existing.topic != body.topic:
        raise CommandError(
            INVALID_OPTIONS, f"replace keeps the topic: sub_id {body.sub_id!r} is on {existing.topic!r}"
        )
    # Validated: only now may a plain topic come into being (for a subscription to hold it).
    topic = (
        known
        if known is not None
        else broker.topic(body.topic)
        if body.subscribe
        else Topic(body.topic, None, broker.run)
    )
    if body.subscribe:
        subscription = Subscription(
            session,
            body.sub_id,
            body.topic,
            filters,
            body.options,
            body.delta,
            topic.key_spec,
            ctx,
            entitlement,
        )
        subscription.schedule = broker.timers.schedule
        if window is not None:
            subscription.hold_window(window)
            admit_window(topic, subscription, existing)
        if bookmark is not None or resuming:
            subscription.bookmark()
            subscription.replaying = bookmark is not None and not bookmark.live_only
        if session.hidden_interval is not None:
            subscription.hide(session.hidden_interval)  # its snapshot goes now, its changes wait
    if body.snapshot and known is not None and not resuming and not topic.has_order(subscription):
        # One pass of the filter over the topic (a resume reads the history; a window over an
        # order that exists already reads the order).
        admit_filter_pass(body.filter, len(known.records))
    received(session, header)
    processed(session, header)
    moved: tuple[int, int] | None = None
    if existing is not None and subscription is not None and moves(existing, subscription, body):
        moved = move(topic, session, body, existing, subscription)  # a viewport moves
    elif existing is not None and subscription is not None:
        _replace(topic, existing, subscription, body.snapshot)
    elif subscription is not None:
        topic.add(subscription)
    if subscription is not None:
        session.subscriptions[body.sub_id] = subscription
    if body.snapshot:
        reader = subscription or Subscription(
            session, None, topic.name, filters, body.options, False, None, ctx, entitlement
        )
        counted = topic.counting.matches(subscription) if subscription is not None else None
        end = {"matches": counted or 0} if body.options.count else {}  # (a plain topic: always 0)
        if moved is not None:
            matches, returned = moved
        elif resuming and subscription is not None:
            matches, returned = _resumable(broker, topic, session, body, subscription, orderby, window, end)
        else:
            matches, returned = _snapshot(topic, session, body, reader, orderby, subscription, end)
        if header.wants("stats"):
            ack(session, header, "stats", matches=matches, records_returned=returned)
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


def _window_spec(body: Query, orderby: OrderBy | None, topic: Topic | None) -> WindowSpec | None:
    """A live window (docs/protocol.md, Live windows) when a ``sow_and_*`` subscription of a SOW
    topic asks for ``top_n``; ``positions`` asks for one."""
    if body.subscribe and body.snapshot and body.top_n is not None and topic is not None and topic.is_sow:
        if body.top_n > MAX_WINDOW_ROWS:
            raise CommandError(
                INVALID_OPTIONS, f"top_n of a live window is at most {MAX_WINDOW_ROWS} (got {body.top_n})"
            )
        sort_key = orderby.sort_key if orderby is not None else sowkey_order
        return WindowSpec(body.orderby or "", sort_key, body.skip_n or 0, body.top_n)
    if body.options.positions:
        raise CommandError(
            INVALID_OPTIONS, "positions is for a live window: sow_and_subscribe with top_n on a SOW topic"
        )
    return None


def _select(topic: Topic, reader: Subscription, body: Query, orderby: Any) -> tuple[int, list[RecordVersion]]:
    """The records the query returns, in order, and how many matched (within the entitlement)."""
    window = reader.window
    if window is not None:  # kept in order already
        records = topic.records
        return len(window.order), [records[key] for key in window.sowkeys()]
    if reader.unfiltered:  # no filter and no entitlement filter: compact records stay undecoded
        versions = list(topic.records.values())
    else:
        in_view = reader.matches
        versions = [v for v in topic.records.values() if in_view(v.data)]
    matches = len(versions)
    if orderby is not None:
        versions = orderby.sort(versions)
    start = body.skip_n or 0
    end = start + body.top_n if body.top_n is not None else None
    if start or end is not None:
        versions = versions[start:end]
    return matches, versions


def _resumable(
    broker: Broker,
    topic: Topic,
    session: Session,
    body: Query,
    subscription: Subscription,
    orderby: Any,
    window: WindowSpec | None,
    end: dict[str, Any],
) -> tuple[int, int]:
    """A ``resume`` subscription's snapshot: the net change since its bookmark when the topic's
    history reaches back to it, else the whole snapshot; ``group_end`` carries the position to
    resume from next time and, when a bookmark was given, whether it was resumed."""
    fields: dict[str, Any] = {"bm": str(broker.changes.applied_position(topic.name)), **end}
    after = resume_point(broker, topic, body.bookmark, window is not None) if topic.is_sow else None
    if body.bookmark is not None:
        fields["resumed"] = after is not None
    if after is None:
        return _snapshot(topic, session, body, subscription, orderby, subscription, fields)
    head = wire.snapshot_head(topic.name_json, orjson.dumps(body.query_id))
    net = net_change(topic, subscription, after)
    _send_snapshot(topic, session, body, head, net.versions, partial(net.message, subscription, head), fields)
    return len(net), len(net)


def _snapshot(
    topic: Topic,
    session: Session,
    body: Query,
    reader: Subscription,
    orderby: Any,
    subscription: Subscription | None,
    end_fields: dict[str, Any] | None = None,
) -> tuple[int, int]:
    matches, versions = _select(topic, reader, body, orderby) if topic.is_sow else (0, [])
    views: list[Any] | None = None
    if subscription is not None and subscription.held is not None:
        # What the subscription holds is what it was sent: its views are taken now. Otherwise
        # each view is made as the writer drains the snapshot, never a list of them all.
        views = [subscription.view_of(version) for version in versions]
        for version, view in zip(versions, views, strict=True):
            subscription.remember(version.key, view)
    head = wire.snapshot_head(topic.name_json, orjson.dumps(body.query_id))
    message = _record_messages(head, versions, views, reader)
    _send_snapshot(topic, session, body, head, versions, message, end_fields)
    return matches, len(versions)


def _send_snapshot(
    topic: Topic,
    session: Session,
    body: Query,
    head: bytes,
    versions: list[RecordVersion],
    message: Callable[[int], bytes | None],
    end_fields: dict[str, Any] | None,
) -> None:
    """Queue a snapshot (a plain one, or a resume's net change): ``group_begin``, one message
    about each of ``versions`` (``message(index)``, encoded as the socket's writer drains it: the
    snapshot holds the versions, never their bodies), ``group_end``. The stream counts against
    the socket's queue, and later changes of its records go after it (queue/outbox.py)."""
    session.send(wire.group_begin(body.query_id))
    stream = _encode_snapshot(len(versions), message, body.batch_size)
    records = SnapshotRecords(topic.name, versions)
    session.send_stream(stream, len(versions), estimated_size(head, versions), records)
    session.send(wire.group_end(body.query_id, len(versions), **(end_fields or {})))


def _encode_snapshot(
    count: int, message: Callable[[int], bytes | None], batch: int | None
) -> Iterator[bytes]:
    for index in range(count):
        if batch and index and index % batch == 0:
            yield FRAME_BREAK
        encoded = message(index)
        if encoded is not None:
            yield encoded


def _record_messages(
    head: bytes, versions: list[RecordVersion], views: list[Any] | None, reader: Subscription
) -> Callable[[int], bytes | None]:
    """A plain snapshot's message by index: the record in full (a window's with its place in it).
    A closure over what every record needs, looked up once: it runs once per record sent."""
    positions = reader.positions
    full_body, body_of = reader.full_body, reader.body_of

    def message(index: int) -> bytes | None:
        version = versions[index]
        record_head = head + b',"pos":%d' % (index + 1) if positions else head
        if views is not None:
            return record_message(record_head, partial(full_body, version.key, version, views[index], {}))
        return record_message(record_head, partial(body_of, version.key, version))

    return message


def _replace(topic: Topic, old: Subscription, new: Subscription, snapshot: bool) -> None:
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
    old.successor = new
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
