"""Moving a viewport (docs/protocol.md, Viewports): a ``replace`` of a live window subscription
with a new ``top_n``, ``skip_n``, ``orderby`` or filter.

The answer is one entry in the socket's queue, written in one frame whatever ``bs`` or the frame
size limit would otherwise do (like a transaction, it is a frame of its own past the limit when
it must be): the OOFs of the records that left (with ``oof``), ``group_begin``, one ``sow`` per
record of the new window in window order, each with ``pos``, and ``group_end`` (with ``matches``
for ``count``). A record the window held and whose state the client has is sent as its key and
place alone (``_client_holds``); any other in full.

What it costs grows with the window, never with the topic: the new window is read from its
order (kept when the replace keeps the filter, ``orderby`` and entitlement: the topic opens the
new window before it closes the old one), the records that left are found among what the old
window held, and only the records that entered are encoded.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from functools import partial
from typing import TYPE_CHECKING, Any

import orjson

from ..fanout.subscription import Subscription
from ..fanout.topic import Topic
from ..protocol import wire
from ..protocol.commands import Query
from ..queue.snapshots import estimated_size, record_message

if TYPE_CHECKING:
    from ..records.version import RecordVersion
    from ..session.session import Session


def moves(old: Subscription, new: Subscription, body: Query) -> bool:
    """Whether a ``replace`` of ``old`` by ``new`` moves a viewport: window to window, not a
    resume (that answers with the net change since its bookmark)."""
    return (
        old.window is not None
        and new.window_spec is not None
        and not body.options.resume
        and body.bookmark is None
    )


def move(
    topic: Topic,
    session: Session,
    body: Query,
    old: Subscription,
    new: Subscription,
    leave: Callable[[Subscription], None],
) -> tuple[int, int]:
    """Swap ``old`` for ``new`` (on ``topic``) and queue the answer; the view's size and the rows
    sent. ``old`` may be on another topic: an aggregated window moving to another aggregation
    (another filter, grouping or projection), which ``leave`` ends (its aggregation goes with its
    last subscriber); a group the client holds is then sent as its key alone only where the new
    aggregation's group is what the client has."""
    before: Topic = old.topic_ref
    owed, tx = old.release(math.inf)  # what an interval still owed the client goes first
    with session.tx_frames.whole(tx):
        for _, record_key, owed_change in owed:
            before.deliver(session, (old,), record_key, owed_change)
    assert old.window is not None
    held = _client_holds(old, before, views=before is not topic)
    # A merge function may have left the client another record than the stored one (a queued
    # update merged into another: docs/protocol.md, Conflation): then nothing is taken as held.
    same_view = old.view_kind == new.view_kind and (old.held is not None or before.queue.merge is None)
    was = before.records
    if before is topic:
        topic.replace(old, new)
        old.closed = True
    else:
        topic.add(new)
        leave(old)
    old.hand_over(new)
    window = new.window
    assert window is not None
    records = topic.records
    keys = window.sowkeys()
    staying = set(keys)
    # 1. The records that left, as they are now (only with oof, the old options' or the new).
    oofs: list[bytes] = []
    left: list[str] = [key for key in held if key not in staying and key in was]
    if old.options.oof or new.options.oof:
        oof_head = new.message_head(wire.OOF_COMMAND)
        for key in left:
            version = was[key]
            kept = held[key]
            change = old.oof_message(key, version, old.left_because(version), kept, {})
            if change is not None:
                oofs.append(wire.join(oof_head, change[1]))
    # 2. The window: keys alone for what the client has, the rest in full (their views taken
    # now: what the subscription holds is what it was sent).
    versions = [records[key] for key in keys]
    views: list[Any] = []
    entering: list[RecordVersion] = []
    for version in versions:
        key = version.key
        view = None if before is topic else new.view_of(version)
        if same_view and key in held and (before is topic or held[key] == view):
            views.append(None)
            if new.held is not None:
                kept = held[key]
                new.remember(key, kept if kept is not None else new.view_of(version))
            continue
        view = view if view is not None else new.view_of(version)
        new.remember(key, view)
        views.append(view)
        entering.append(version)
    matches = topic.counting.matches(new)
    end_fields = {"matches": matches} if matches is not None else {}
    head = wire.snapshot_head(topic.name_json, orjson.dumps(body.query_id))
    answer = _answer(new, body.query_id, head, oofs, versions, views, end_fields)
    size = sum(map(len, oofs)) + estimated_size(head, entering) + (len(head) + 48) * len(versions)
    sent = [(topic.name, key) for key in (*keys, *left)]  # later changes of these go after it
    session.send_stream(answer, len(oofs) + len(versions) + 2, size, sent, whole=new, policy=topic.queue)
    return len(window.order), len(versions)


def _client_holds(old: Subscription, topic: Topic, views: bool) -> dict[str, Any]:
    """What the client of window subscription ``old`` (on ``topic``) holds: the views it
    remembers sending, or (a window that remembers nothing: no ``oof``, no deltas) the records in
    its window now, each as it is now (``views``: its view; otherwise None, the record's), since
    every change of a record in the window was sent in full. At most ``top_n`` records either
    way: no pass over the topic."""
    if old.held is not None:
        return dict(old.held)
    assert old.window is not None
    if not views:
        return dict.fromkeys(old.window.sowkeys())
    records = topic.records
    return {key: old.view_of(records[key]) for key in old.window.sowkeys()}


def _answer(
    new: Subscription,
    query_id: Any,
    head: bytes,
    oofs: list[bytes],
    versions: list[RecordVersion],
    views: list[Any],
    end_fields: dict[str, Any],
) -> Iterator[bytes]:
    """The whole answer as one item of the queue (messages comma-joined: the writer puts an
    item into its array frame as it is), encoded when the writer takes it."""
    parts = [*oofs, wire.group_begin(query_id)]
    for place, (version, view) in enumerate(zip(versions, views, strict=True), start=1):
        record_head = head + b',"pos":%d' % place
        if view is None:  # the client has it: its key and its place
            parts.append(record_head + b',"k":' + orjson.dumps(version.key) + b"}")
            continue
        message = record_message(record_head, partial(new.full_body, version.key, version, view, {}))
        if message is not None:
            parts.append(message)
    parts.append(wire.group_end(query_id, len(versions), **end_fields))
    yield b",".join(parts)
