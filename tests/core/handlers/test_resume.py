"""Resuming a view (docs/protocol.md, Resuming a view): with ``resume`` and the last bookmark, a
subscription gets only the net change of its view since then; when that cannot be done, the whole
snapshot."""

from __future__ import annotations

from typing import Any

import jsonpatch
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ..harness import Harness, Peer, of_type, publish


def subscribe(peer: Peer, bm: str | None = None, **fields: Any) -> list[dict[str, Any]]:
    command: dict[str, Any] = {"c": "sow_and_subscribe", "t": "orders", "sub_id": "v", "o": "resume"}
    if bm is not None:
        command["bm"] = bm
    command.update(fields)
    return peer.send(command)


def last_bm(messages: list[dict[str, Any]]) -> str:
    return [m["bm"] for m in messages if "bm" in m][-1]


def view_of(messages: list[dict[str, Any]], view: dict[str, Any] | None = None) -> dict[str, Any]:
    """A client's view after applying ``messages`` (full-record subscriptions)."""
    view = dict(view or {})
    for m in messages:
        if m["c"] in ("sow", "p"):
            view[m["k"]] = m["data"]
        elif m["c"] == "oof":
            view.pop(m["k"], None)
    return view


def server_view(h: Harness, filter_text: str) -> dict[str, Any]:
    got = h.peer().send({"c": "sow", "t": "orders", "cid": "q", "filter": filter_text})
    return {m["k"]: m["data"] for m in got if m["c"] == "sow"}


def test_every_message_of_a_resume_subscription_carries_a_bm() -> None:
    h = Harness()
    publisher, watcher = h.peer(), h.peer()
    publisher.send(publish(1, qty=1), publish(2, qty=2))
    got = subscribe(watcher, filter="/qty < 100", o="resume,oof")
    end = of_type(got, "group_end")[0]
    assert all("bm" in m for m in of_type(got, "sow")) and "bm" in end and "resumed" not in end
    publisher.send(publish(1, qty=3), publish(2, qty=500))
    live = watcher.take()
    assert [m["c"] for m in live] == ["p", "oof"] and all("bm" in m for m in live)


def test_a_resume_sends_only_what_changed_entered_or_left() -> None:
    h = Harness()
    publisher, watcher = h.peer(), h.peer()
    publisher.send(*[publish(n, qty=n) for n in range(10)])
    first = subscribe(watcher, filter="/qty < 100")
    bm = last_bm(first)
    view = view_of(first)
    watcher.session.close_code = 1000  # the socket is gone
    h.broker.close_session(watcher.session)
    publisher.send(
        publish(1, qty=11),  # changed
        publish(20, qty=20),  # entered
        publish(2, qty=200),  # left: match
        {"c": "sow_delete", "t": "orders", "filter": "/order = 3"},  # left: deleted
        publish(30, qty=300),  # never in the view
        publish(4, qty=4),  # published again, unchanged: a change all the same
    )
    again = h.peer()
    got = subscribe(again, bm=bm, filter="/qty < 100")
    end = of_type(got, "group_end")[0]
    assert end["resumed"] is True and end["records"] == 5
    sent = sorted((m["c"], m["data"]["order"], m.get("reason")) for m in got if m["c"] in ("sow", "oof"))
    assert sent == [
        ("oof", 2, "match"),
        ("oof", 3, "deleted"),
        ("sow", 1, None),
        ("sow", 4, None),
        ("sow", 20, None),
    ]
    assert view_of(got, view) == server_view(h, "/qty < 100")
    publisher.send(publish(5, qty=6))
    assert [m["data"]["qty"] for m in of_type(again.take(), "p")] == [6], "then live"


@pytest.mark.parametrize("bm", ["12x", "", "99999999999999999999", "2024-01-01T00:00:00Z", "now"])
def test_a_bookmark_that_cannot_be_resumed_gives_the_whole_snapshot(bm: str) -> None:
    h = Harness()
    publisher, watcher = h.peer(), h.peer()
    publisher.send(*[publish(n, qty=n) for n in range(3)])
    got = subscribe(watcher, bm=bm)
    end = of_type(got, "group_end")[0]
    assert end["resumed"] is False and len(of_type(got, "sow")) == 3


def test_a_bookmark_older_than_the_history_gives_the_whole_snapshot() -> None:
    h = Harness(server={"resume_history_changes": 5})
    publisher, watcher = h.peer(), h.peer()
    publisher.send(publish(1, qty=1))
    bm = last_bm(subscribe(watcher))
    publisher.send(*[publish(n, qty=n) for n in range(2, 7)])
    assert of_type(subscribe(h.peer(), bm=bm), "group_end")[0]["resumed"] is True
    publisher.send(publish(7, qty=7))  # the change after the bookmark leaves the history
    got = subscribe(h.peer(), bm=bm)
    assert of_type(got, "group_end")[0]["resumed"] is False and len(of_type(got, "sow")) == 7


def test_the_history_is_bounded_by_age() -> None:
    h = Harness(server={"resume_history": "1m"})
    publisher, watcher = h.peer(), h.peer()
    bm = last_bm(subscribe(watcher))
    publisher.send(publish(1, qty=1))
    h.clock.now += 61
    publisher.send(publish(2, qty=2))
    assert of_type(subscribe(h.peer(), bm=bm), "group_end")[0]["resumed"] is False


def test_expired_and_entitlement_reasons() -> None:
    users = [
        {"user_id": "feed", "password": "pw", "read": ["*"], "write": ["*"]},
        {"user_id": "alice", "password": "pw", "read": ["*"], "filter": {"orders": "/owner = 'alice'"}},
    ]
    h = Harness(auth={"user": users})
    publisher, watcher = h.peer(), h.peer()
    publisher.send({"c": "logon", "user_id": "feed", "pw": "pw"})
    watcher.send({"c": "logon", "user_id": "alice", "pw": "pw"})
    publisher.send(
        {**publish(1, owner="alice", qty=1), "e": 5},
        publish(2, owner="alice", qty=2, secret="a"),
    )
    bm = last_bm(subscribe(watcher))
    publisher.send(publish(2, owner="bob", qty=2, secret="b"))
    h.clock.now += 6
    h.broker.advance(h.clock.now)
    again = h.peer()
    again.send({"c": "logon", "user_id": "alice", "pw": "pw"})
    got = subscribe(again, bm=bm)
    oofs = {m["data"]["order"]: (m["reason"], m["data"]) for m in of_type(got, "oof")}
    assert oofs[1][0] == "expired"
    assert oofs[2] == ("entitlement", {"order": 2, "owner": "alice", "qty": 2, "secret": "a"})


def test_a_delta_subscription_resumes_and_then_sends_deltas_against_the_view() -> None:
    h = Harness()
    publisher, watcher = h.peer(), h.peer()
    publisher.send(publish(1, qty=1, px=5), publish(2, qty=2, px=6))
    bm = last_bm(watcher.send({"c": "sow_and_delta_subscribe", "t": "orders", "sub_id": "v", "o": "resume"}))
    publisher.send(publish(1, qty=10, px=5))
    again = h.peer()
    got = again.send({"c": "sow_and_delta_subscribe", "t": "orders", "sub_id": "v", "o": "resume", "bm": bm})
    assert [m["data"]["order"] for m in of_type(got, "sow")] == [1]
    publisher.send(publish(2, qty=3, px=6))
    [delta] = of_type(again.take(), "p")
    assert delta["patch"] == [{"op": "replace", "path": "/qty", "value": 3}], "the unchanged record is held"


def test_resume_is_for_sow_and_subscribe_only() -> None:
    h = Harness()
    [ack] = h.peer().send({"c": "subscribe", "t": "orders", "sub_id": "s", "o": "resume"})
    assert ack["reason"].startswith("invalid options: resume is for")


def test_a_window_is_sent_whole() -> None:
    h = Harness()
    publisher, watcher = h.peer(), h.peer()
    publisher.send(*[publish(n, qty=n) for n in range(5)])
    bm = last_bm(subscribe(watcher, top_n=2))
    got = subscribe(h.peer(), bm=bm, top_n=2)
    assert of_type(got, "group_end")[0]["resumed"] is False and len(of_type(got, "sow")) == 2


OPS = st.lists(
    st.tuples(st.sampled_from(["publish", "delete"]), st.integers(0, 8), st.integers(0, 200)),
    min_size=0,
    max_size=25,
)


@settings(max_examples=300, deadline=None)
@given(before=OPS, seen=OPS, away=OPS, delta=st.booleans(), newest=st.booleans())
def test_a_resumed_view_ends_equal_to_the_servers(
    before: list[tuple[str, int, int]],
    seen: list[tuple[str, int, int]],
    away: list[tuple[str, int, int]],
    delta: bool,
    newest: bool,
) -> None:
    """Whatever happened before, while watching and while away: the view the client had, with
    the resumed snapshot applied, is the server's view."""
    h = Harness()
    publisher, watcher = h.peer(), h.peer()

    def run(ops: list[tuple[str, int, int]]) -> None:
        for op, order, qty in ops:
            if op == "publish":
                publisher.send(publish(order, qty=qty))
            else:
                publisher.send({"c": "sow_delete", "t": "orders", "filter": f"/order = {order}"})

    run(before)
    command = "sow_and_delta_subscribe" if delta else "sow_and_subscribe"
    subscription = {"c": command, "t": "orders", "sub_id": "v", "o": "resume,oof", "filter": "/qty < 100"}
    received = watcher.send(subscription)
    run(seen)
    received += watcher.take()
    view: dict[str, Any] = {}
    for m in received:  # a delta subscriber applies patches to what it holds
        if m["c"] == "p" and "patch" in m:
            view[m["k"]] = jsonpatch.apply_patch(view[m["k"]], m["patch"])
        else:
            view = view_of([m], view)
    bookmarks = [int(m["bm"]) for m in received if "bm" in m]
    bm = max(bookmarks) if newest else bookmarks[-1]  # either resumes
    h.broker.close_session(watcher.session)
    run(away)
    got = h.peer().send({**subscription, "bm": str(bm)})
    assert of_type(got, "group_end")[0]["resumed"] is True
    assert view_of(got, view) == server_view(h, "/qty < 100")


def test_the_history_is_bounded_in_bytes() -> None:
    h = Harness(server={"resume_history_bytes": 50_000})
    publisher, watcher = h.peer(), h.peer()
    publisher.send(publish(1, pad="x" * 10_000))
    bm = last_bm(subscribe(watcher))
    publisher.send(publish(1, pad="y" * 10_000))  # holds the 10 KB version it replaced
    assert of_type(subscribe(h.peer(), bm=bm), "group_end")[0]["resumed"] is True
    for n in range(5):
        publisher.send(publish(1, pad=str(n) * 10_000))
    history = h.broker.topics["orders"].sow.history
    assert history is not None and history.bytes <= 50_000
    assert of_type(subscribe(h.peer(), bm=bm), "group_end")[0]["resumed"] is False


def test_a_change_bigger_than_the_whole_byte_bound_is_applied_and_not_held() -> None:
    h = Harness(server={"resume_history_bytes": 1_000})
    publisher, watcher = h.peer(), h.peer()
    publisher.send(publish(1, pad="x" * 2_000))
    bm = last_bm(subscribe(watcher))
    acks = publisher.send(publish(1, pad="y" * 2_000))  # its history entry alone is over the bound
    assert acks == []  # no failure
    assert [m["data"]["pad"][0] for m in watcher.take() if m["c"] == "p"] == ["y"]
    assert of_type(subscribe(h.peer(), bm=bm), "group_end")[0]["resumed"] is False
