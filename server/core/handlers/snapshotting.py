"""Answering a query with its snapshot: the records (or groups) a ``sow`` or ``sow_and_*`` reads,
in order, queued as one stream that the socket's writer encodes as it drains it, between
``group_begin`` and ``group_end``; or, for a ``resume``, the net change since its bookmark
(resuming.py). A viewport's move answers in a frame of its own (moving.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import TYPE_CHECKING, Any

import orjson

from ..fanout.passes import Selection
from ..fanout.subscription import Subscription
from ..fanout.windows import WindowSpec
from ..filters.entitlement import gate_share
from ..filters.orderby import OrderBy
from ..protocol import wire
from ..protocol.commands import Query
from ..queue.snapshots import FRAME_BREAK, JoinedRows, SnapshotRecords, estimated_size, record_message
from ..records.version import RecordVersion
from .resuming import net_change, resume_point

if TYPE_CHECKING:
    from ..broker.broker import Broker
    from ..fanout.topic import Topic
    from ..session.session import Session

# What a snapshot selects: how many records matched, those it returns, in order, and (made by a
# pass in slices) their views, and those views by key when they are every record that passes.
Selected = tuple[int, list[RecordVersion], list[Any] | None, dict[str, Any] | None]


def resumable(
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
        return snapshot(topic, session, body, subscription, orderby, subscription, fields)
    head = wire.snapshot_head(topic.name_json, orjson.dumps(body.query_id))
    net = net_change(topic, subscription, after)
    message = partial(net.message, subscription, head)
    send_snapshot(topic, session, body, head, net.versions, message, fields, subscription)
    return len(net), len(net)


def snapshot(
    topic: Topic,
    session: Session,
    body: Query,
    reader: Subscription,
    orderby: Any,
    subscription: Subscription | None,
    end_fields: dict[str, Any] | None = None,
) -> tuple[int, int]:
    matches, versions, views, remembered = _select(topic, reader, body, orderby) if topic.is_sow else _NONE
    # What the subscription holds is what it was sent: its views are taken now, all at once when
    # the pass in slices that found the records made them by key, else one by one (made by that
    # pass, when one did). Otherwise each view is made as the writer drains the snapshot, never a
    # list of them all.
    taken = remembered is not None and subscription is not None and subscription.take_held(remembered)
    if subscription is not None and subscription.held is not None and not taken:
        if views is None:
            views = [subscription.view_of(version) for version in versions]
        for version, view in zip(versions, views, strict=True):
            subscription.remember(version.key, view)
    head = wire.snapshot_head(topic.name_json, orjson.dumps(body.query_id))
    options = reader.options
    if options.select is None and not reader.positions:
        show_key = not options.no_sowkey
        rows = JoinedRows(head, versions, show_key, body.batch_size, options.timestamp, reader.bookmarked)
        _send(topic, session, body, head, versions, rows, end_fields, subscription)
    else:
        message = _record_messages(head, versions, views, reader)
        send_snapshot(topic, session, body, head, versions, message, end_fields, subscription)
    return matches, len(versions)


def send_snapshot(
    topic: Topic,
    session: Session,
    body: Query,
    head: bytes,
    versions: list[RecordVersion],
    message: Callable[[int], bytes | None],
    end_fields: dict[str, Any] | None,
    subscription: Subscription | None = None,
) -> None:
    """Queue a snapshot (a plain one, or a resume's net change): ``group_begin``, one message
    about each of ``versions`` (``message(index)``, encoded as the socket's writer drains it: the
    snapshot holds the versions, never their bodies), ``group_end``. The stream counts against
    the socket's queue, and later changes of its records go after it (queue/outbox.py); so do
    ``subscription``'s later changes of any record, as the snapshot is its whole view."""
    stream = _encode_snapshot(len(versions), message, body.batch_size)
    _send(topic, session, body, head, versions, stream, end_fields, subscription)


def _send(
    topic: Topic,
    session: Session,
    body: Query,
    head: bytes,
    versions: list[RecordVersion],
    stream: Iterator[bytes],
    end_fields: dict[str, Any] | None,
    subscription: Subscription | None,
) -> None:
    begin = wire.group_begin(body.query_id)
    end = wire.group_end(body.query_id, len(versions), **(end_fields or {}))
    size = estimated_size(head, versions) + len(begin) + len(end) + 2
    records = SnapshotRecords(topic.name, versions)
    # One item of the queue, its group_begin and group_end included: a relief that drops the
    # subscription while the snapshot is queued leaves it whole or leaves it out (Session.send_stream).
    session.send_stream(stream, len(versions) + 2, size, records, subscription, begin, end, topic.queue)


# What a snapshot of a topic that keeps no records selects.
_NONE: Selected = (0, [], None, None)


def _select(topic: Topic, reader: Subscription, body: Query, orderby: Any) -> Selected:
    """The records the query returns, in order, how many matched (within the entitlement), and
    when a pass in slices made them, their views (else None) and those views by key, when they
    are every record that passes (else None)."""
    window = reader.window
    if window is not None:  # kept in order already
        records = topic.records
        return len(window.order), [records[key] for key in window.sowkeys()], None, None
    start = body.skip_n or 0
    end = start + body.top_n if body.top_n is not None else None
    prepared = topic.take_prepared(selection_share(reader, orderby))
    if isinstance(prepared, Selection):  # read in slices before the command ran (preparing.py)
        matches, found, views = prepared.finish(start, end)
        return matches, found, views, prepared.remembered(start, end)
    if reader.unfiltered:  # no filter and no entitlement filter: compact records stay undecoded
        versions = topic.sow.every_version()  # shared: read, never changed
    else:
        in_view = reader.matches
        versions = [v for v in topic.records.values() if in_view(v.data)]
    matches = len(versions)
    if orderby is not None:
        versions = orderby.sort(versions)
    if start or end is not None:
        versions = versions[start:end]
    return matches, versions, None, None


def selection_share(reader: Subscription, orderby: OrderBy | None) -> tuple[Any, ...]:
    """What decides a snapshot's records and their order: its reader's gates and its ``orderby``."""
    return (orderby, *gate_share(reader.filters, reader.entitlement, reader.ctx))


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
