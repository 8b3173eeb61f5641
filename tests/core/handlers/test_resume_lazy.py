"""A resumed view (docs/protocol.md, Resuming a view) is encoded as the socket reads it, like a
plain snapshot, and says exactly what the eager resume said (eager_resume.py, the reference): the
same messages in the same order, as the view was at the subscribe, whatever is published before the
socket reads them (those follow ``group_end``, none lost, none twice)."""

from __future__ import annotations

from typing import Any
from unittest import mock

import jsonpatch
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server.core.fanout.subscription import Subscription
from server.core.fanout.topic import Topic
from server.core.handlers import snapshotting
from server.core.handlers.resuming import NetChange, net_change
from server.core.protocol import wire

from ..harness import Harness, Peer, of_type, publish
from .eager_resume import eager_resume

USERS = [
    {"user_id": "feed", "password": "pw", "read": ["*"], "write": ["*"]},
    {"user_id": "alice", "password": "pw", "read": ["*"], "filter": {"orders": "/owner = 'alice'"}},
    {"user_id": "bob", "password": "pw", "read": ["*"]},
]

# (what, order, qty, owner, lifetime): a publish (with a lifetime in seconds, or none), a delta
# publish of the quantity, a delete, or three seconds passing (records expire).
Op = tuple[str, int, int, str, int | None]
OPS = st.lists(
    st.tuples(
        st.sampled_from(["publish", "publish", "publish", "delta", "delete", "tick"]),
        st.integers(0, 5),
        st.integers(0, 150),
        st.sampled_from(["alice", "bob"]),
        st.sampled_from([None, None, 2, 5]),
    ),
    max_size=20,
)


def logged_on(h: Harness, user: str) -> Peer:
    peer = h.peer()
    peer.send({"c": "logon", "user_id": user, "pw": "pw"})
    return peer


def run(h: Harness, feed: Peer, ops: list[Op]) -> None:
    for what, order, qty, owner, lifetime in ops:
        if what == "publish":
            command = publish(order, qty=qty, owner=owner, note=f"n{qty}")
            feed.send(command if lifetime is None else {**command, "e": lifetime})
        elif what == "delta":
            feed.send({"c": "delta_publish", "t": "orders", "data": {"order": order, "qty": qty}})
        elif what == "delete":
            feed.send({"c": "sow_delete", "t": "orders", "filter": f"/order = {order}"})
        else:
            h.clock.now += 3
            h.broker.advance(h.clock.now)


def applied(view: dict[str, Any], messages: list[dict[str, Any]]) -> dict[str, Any]:
    """A client's view after ``messages`` (a delta subscriber patches what it holds)."""
    view = dict(view)
    for m in messages:
        if m["c"] == "oof":
            view.pop(m["k"], None)
        elif m["c"] == "p" and "patch" in m:
            view[m["k"]] = jsonpatch.apply_patch(view[m["k"]], m["patch"])
        elif m["c"] in ("sow", "p"):
            view[m["k"]] = m["data"]
    return view


class Reference:
    """``net_change`` as handlers/snapshotting.py calls it, that also keeps the eager resume's
    messages, encoded at the same moment."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] | None = None

    def __call__(self, topic: Topic, subscription: Subscription, after: int) -> NetChange:
        head = wire.snapshot_head(topic.name_json, orjson.dumps(subscription.sub_id))
        eager = eager_resume(topic, subscription, after, head)
        self.messages = [orjson.loads(message) for _, message in eager]
        return net_change(topic, subscription, after)


@settings(max_examples=250, deadline=None)
@given(
    before=OPS,
    seen=OPS,
    away=OPS,
    during=OPS,
    user=st.sampled_from(["alice", "bob"]),
    delta=st.booleans(),
    options=st.sampled_from(["resume,oof", "resume", "resume,oof,select=[-/note]", "resume,oof,no_empties"]),
    filter_text=st.sampled_from([None, "/qty < 100", "/qty >= 40"]),
    top_n=st.sampled_from([None, None, None, 2]),
    newest=st.booleans(),
)
@pytest.mark.pure
def test_a_lazy_resume_sends_what_the_eager_one_did(
    before: list[Op],
    seen: list[Op],
    away: list[Op],
    during: list[Op],
    user: str,
    delta: bool,
    options: str,
    filter_text: str | None,
    top_n: int | None,
    newest: bool,
) -> None:
    h = Harness(auth={"user": USERS})
    feed, watcher = logged_on(h, "feed"), logged_on(h, user)
    run(h, feed, before)
    command: dict[str, Any] = {
        "c": "sow_and_delta_subscribe" if delta else "sow_and_subscribe",
        "t": "orders",
        "sub_id": "v",
        "o": options,
    }
    if filter_text is not None:
        command["filter"] = filter_text
    if top_n is not None:
        command["top_n"] = top_n
    received = watcher.send(command)
    run(h, feed, seen)
    received += watcher.take()
    bookmarks = [int(m["bm"]) for m in received if "bm" in m]
    bm = max(bookmarks) if newest else bookmarks[-1]  # the last one received, or the newest
    h.broker.close_session(watcher.session)
    run(h, feed, away)

    again, reference = logged_on(h, user), Reference()
    with mock.patch.object(snapshotting, "net_change", reference):
        h.engine.receive(again.session, orjson.dumps({**command, "bm": str(bm)}))
    run(h, feed, during)  # before the socket reads a byte of the resume
    got = again.take()

    end_at = next(i for i, m in enumerate(got) if m["c"] == "group_end")
    end = got[end_at]
    if top_n is not None:
        assert end["resumed"] is False and reference.messages is None, "a window is sent whole"
        return
    assert end["resumed"] is True and reference.messages is not None
    begin_at = next(i for i, m in enumerate(got) if m["c"] == "group_begin")
    assert got[begin_at + 1 : end_at] == reference.messages
    assert end["records"] == len(reference.messages)
    # Atomic: what the resume sends is the view at the subscribe; later changes follow it, once.
    position = int(end["bm"])
    assert all(int(m["bm"]) <= position for m in reference.messages)
    live = [(m["k"], int(m["bm"])) for m in got[end_at + 1 :] if "bm" in m]
    assert all(bm > position for _, bm in live) and len(set(live)) == len(live)
    if "oof" in options:  # (without it, a record that leaves the view stays with the client)
        query: dict[str, Any] = {"c": "sow", "t": "orders", "o": options.replace("resume,oof", "")}
        if filter_text is not None:
            query["filter"] = filter_text
        server = {m["k"]: m["data"] for m in of_type(logged_on(h, user).send(query), "sow")}
        assert applied(applied({}, received), got) == server


@pytest.mark.pure
def test_a_resume_is_encoded_only_as_the_socket_reads_it() -> None:
    h = Harness()
    publisher, watcher = h.peer(), h.peer()
    command = {"c": "sow_and_subscribe", "t": "orders", "sub_id": "v", "o": "resume,oof"}
    publisher.send(*[publish(n, qty=0) for n in range(100)])
    bm = of_type(watcher.send(command), "group_end")[0]["bm"]
    publisher.send(*[publish(n, qty=n) for n in range(100)])
    publisher.send({"c": "sow_delete", "t": "orders", "filter": "/order < 10"})
    again = h.peer()
    encoded: list[str] = []
    body_of = Subscription.body_of

    def counted(subscription: Subscription, key: str | None, version: Any) -> bytes:
        encoded.append("body")
        return body_of(subscription, key, version)

    with mock.patch.object(Subscription, "body_of", counted):
        h.engine.receive(again.session, orjson.dumps({**command, "bm": bm}))
        assert encoded == [], "nothing is encoded before the socket reads"
        # It counts against the socket's queue as a snapshot does: every message it will send.
        outbox = again.session.outbox
        assert outbox.queued_messages == 100 + 2  # and group_begin, group_end
        publisher.send(publish(50, qty=-1))  # changed after the subscribe: sent after group_end
        got = again.take()
    assert len(encoded) == 90
    end_at = next(i for i, m in enumerate(got) if m["c"] == "group_end")
    sent = got[1:end_at]
    assert [m["c"] for m in sent] == ["oof"] * 10 + ["sow"] * 90
    assert {m["reason"] for m in sent[:10]} == {"deleted"}
    assert next(m for m in sent if m["k"] == got[-1]["k"])["data"]["qty"] == 50, "as at the subscribe"
    assert got[-1]["data"] == {"order": 50, "qty": -1} and outbox.queued_messages == 0
