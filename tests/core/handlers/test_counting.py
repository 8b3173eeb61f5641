"""The option ``count`` and viewport moves in the engine (docs/protocol.md, Viewports): what the
socket tests cannot stage exactly (a queue that conflates, a frame cut by its size limit, a
hidden page's interval, a reload of entitlements, a resume), and what a move costs."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from server.core.fanout.topic import Topic
from server.core.settings.config import parse_config

from ..harness import Harness, Peer, logged_on, of_type, publish

Messages = list[dict[str, Any]]


def frames(peer: Peer, max_bytes: int = 1 << 20) -> list[Messages]:
    """What the socket's writer would write, frame by frame."""
    out: list[Messages] = []
    while (frame := peer.session.outbox.take_frame(max_bytes)) is not None:
        out.append(orjson.loads(frame))
    return out


def counts(messages: Messages) -> list[tuple[list[Any], int]]:
    return [(m["sids"], m["matches"]) for m in messages if m["c"] == "count"]


def window(
    sub_id: str = "v", top: int = 3, skip: int = 0, options: str = "count", **fields: Any
) -> dict[str, Any]:
    return {
        "c": "sow_and_subscribe",
        "t": "orders",
        "sub_id": sub_id,
        "top_n": top,
        "skip_n": skip,
        "orderby": "/order",
        "o": options,
        **fields,
    }


def test_a_burst_sends_one_count_with_the_last_number() -> None:
    h = Harness()
    feed, viewer = h.peer(), h.peer()
    viewer.send(window())
    feed.send(*[publish(n) for n in range(10)])
    written = frames(viewer)
    assert [counts(frame) for frame in written] == [[(["v"], 10)]]
    assert written[0][-1]["c"] == "count"  # behind the changes it counts


def test_a_count_stays_behind_its_change_when_frames_are_cut() -> None:
    """Small frames: each count written is the number after every change written before it, and
    no frame holds two counts of one subscription."""
    h = Harness()
    feed, viewer = h.peer(), h.peer()
    viewer.send(window(top=50, options="count"))
    for n in range(12):
        feed.send(publish(n, pad="x" * 40))
    seen = 0
    for frame in frames(viewer, max_bytes=300):
        assert len(counts(frame)) <= 1
        for m in frame:
            seen += m["c"] == "p"
            if m["c"] == "count":
                assert m["matches"] == seen
    assert seen == 12


def test_a_queue_that_conflates_keeps_one_count() -> None:
    h = Harness(server={"queue_max_messages": 8})
    feed, viewer = h.peer(), h.peer()
    viewer.send({"c": "sow_and_subscribe", "t": "orders", "sub_id": "all", "o": "count"})
    for round_ in range(5):
        feed.send(*[publish(n, round=round_) for n in range(3)])
    written = [m for frame in frames(viewer) for m in frame]
    assert viewer.session.close_code is None
    assert counts(written) == [(["all"], 3)]


def test_a_hidden_page_gets_its_count_with_its_interval() -> None:
    h = Harness()
    feed, viewer = h.peer(), h.peer()
    viewer.send(window())
    viewer.send({"c": "visibility", "hidden": True})
    feed.send(publish(1), publish(50))
    assert counts(viewer.take()) == []
    h.clock.now += 1.1
    h.broker.advance(h.clock.now)
    assert counts(viewer.take()) == [(["v"], 2)]
    feed.send(publish(60))  # outside the window: nothing released, shown again: the number
    viewer.take()
    assert counts(viewer.send({"c": "visibility", "hidden": False})) == [(["v"], 3)]


def test_a_transaction_counts_once_at_its_end() -> None:
    h = Harness()
    feed, viewer = h.peer(), h.peer()
    viewer.send(window())
    viewer.send(
        {"c": "sow_and_subscribe", "t": "orders", "sub_id": "big", "filter": "/order > 5", "o": "count"}
    )
    feed.send(publish(20))
    viewer.take()
    feed.send(
        {
            "c": "tx",
            "cmds": [publish(1), publish(7), {"c": "sow_delete", "t": "orders", "filter": "/order = 20"}],
        }
    )
    (frame,) = frames(viewer)
    assert [m["c"] for m in frame][-3:] == ["count", "count", "tx_end"]
    assert sorted((m["sids"][0], m["matches"]) for m in frame if m["c"] == "count") == [("big", 1), ("v", 2)]


def test_count_follows_a_reload_of_entitlements() -> None:
    users = [
        {
            "user_id": "alice",
            "password": "pw",
            "read": ["*"],
            "write": ["*"],
            "filter": {"orders": "/c = 'a'"},
        },
        {"user_id": "feed", "password": "pw", "read": ["*"], "write": ["*"]},
    ]
    h = Harness(auth={"user": users})
    feed, alice = logged_on(h, "feed"), logged_on(h, "alice")
    feed.send(*[publish(n, c="a" if n < 3 else "b") for n in range(6)])
    got = alice.send({"c": "sow_and_subscribe", "t": "orders", "sub_id": "s", "o": "count"})
    assert of_type(got, "group_end")[0]["matches"] == 3
    users[0]["filter"] = {"orders": "/c = 'b'"}
    h.engine.reload_auth(
        parse_config({"topic": [{"name": "orders", "key": ["/order"]}], "auth": {"user": users}}).users
    )
    after = alice.take()
    assert counts(after) == []  # 3 left and 3 came: the number did not change
    users[0]["filter"] = {"orders": "/order = 4"}
    h.engine.reload_auth(
        parse_config({"topic": [{"name": "orders", "key": ["/order"]}], "auth": {"user": users}}).users
    )
    after = alice.take()
    assert after[-1] == {"c": "count", "t": "orders", "sids": ["s"], "matches": 1}


def test_a_resumed_view_counts_now() -> None:
    h = Harness(topics=[{"name": "orders", "key": ["/order"], "durable": True}])
    feed, viewer = h.peer(), h.peer()
    feed.send(*[publish(n) for n in range(4)])
    got = viewer.send({"c": "sow_and_subscribe", "t": "orders", "sub_id": "r", "o": "resume,count"})
    end = of_type(got, "group_end")[0]
    viewer.send({"c": "unsubscribe", "sub_id": "r"})
    feed.send(publish(9))
    again = viewer.send(
        {"c": "sow_and_subscribe", "t": "orders", "sub_id": "r", "o": "resume,count", "bm": end["bm"]}
    )
    assert of_type(again, "group_end")[0]["matches"] == 5


@pytest.mark.pure
@pytest.mark.parametrize("options", ["", "oof", "oof,positions"])
def test_a_move_over_the_same_order_reads_neither_the_topic_nor_a_new_order(
    options: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = Harness()
    feed, viewer = h.peer(), h.peer()
    feed.send(*[publish(n) for n in range(2000)])
    viewer.send(window(top=50, options=options))
    topic: Topic = h.broker.topics["orders"]
    (order,) = topic.orders.values()
    # The records are not read: a move touches the window, not the topic.
    monkeypatch.setattr(Topic, "records", property(lambda self: _Guarded(self.sow.records)))
    got = viewer.send(window(top=50, skip=10, options=f"{options},replace".strip(",")))
    assert list(topic.orders.values()) == [order]
    sows = of_type(got, "sow")
    assert [("data" in m) for m in sows] == [False] * 40 + [True] * 10
    assert len(of_type(got, "oof")) == (10 if "oof" in options else 0)
    assert _Guarded.iterated == 0


class _Guarded(dict[str, Any]):
    """The topic's records, counting passes over them."""

    iterated = 0

    def values(self) -> Any:
        _Guarded.iterated += 1
        return super().values()

    def items(self) -> Any:
        _Guarded.iterated += 1
        return super().items()

    def __iter__(self) -> Any:
        _Guarded.iterated += 1
        return super().__iter__()


def test_a_move_to_another_order_is_charged_once_against_the_socket() -> None:
    """The order a replace leaves stops counting: moving between orders never runs out of the
    socket's budget of distinct orders."""
    h = Harness()
    feed, viewer = h.peer(), h.peer()
    feed.send(*[publish(n, qty=n % 7) for n in range(20)])
    viewer.send(window())
    for n in range(40):
        orderby = ["/qty", "/qty DESC", "/order DESC", "/order"][n % 4]
        got = viewer.send({**window(options="count,replace"), "orderby": orderby, "cid": n})
        assert got[0]["status"] == "success", got[0]
        assert of_type(got, "group_end")[0]["matches"] == 20
    orders = h.broker.topics["orders"].orders
    assert len(orders) - orders.idle == 1, "one order in use; those left are kept idle, uncharged"


def test_count_needs_a_snapshot_subscription() -> None:
    h = Harness()
    peer = h.peer()
    for command in ("subscribe", "sow", "delta_subscribe"):
        got = peer.send({"c": command, "t": "orders", "sub_id": command, "cid": command, "o": "count"})
        assert got[-1]["reason"].startswith("invalid options: count is for")


def test_a_plain_topic_counts_nothing() -> None:
    h = Harness()
    feed, peer = h.peer(), h.peer()
    got = peer.send({"c": "sow_and_subscribe", "t": "chatter", "sub_id": "c", "o": "count"})
    assert of_type(got, "group_end")[0]["matches"] == 0
    assert counts(feed.send({"c": "publish", "t": "chatter", "data": {"x": 1}}) + peer.take()) == []


def test_a_count_left_for_the_next_frame_is_the_latest_when_written() -> None:
    """The frame size limit cuts a frame right before a count: the count waits, and when a newer
    change comes before the next frame, that frame has the newer count alone, behind it."""
    h = Harness()
    feed, viewer = h.peer(), h.peer()
    viewer.send(window(top=5))
    feed.send(publish(1))
    outbox = viewer.session.outbox
    first = orjson.loads(outbox.take_frame(10) or b"[]")  # room for the first message only
    assert [m["c"] for m in first] == ["p"]
    feed.send(publish(2))
    (second,) = frames(viewer)
    assert [(m["c"], m.get("matches")) for m in second] == [("p", None), ("count", 2)]


def test_a_sealed_transaction_keeps_its_count_and_the_latest_follows() -> None:
    """What docs/protocol.md, Viewports says of a transaction's count and a later change."""
    h = Harness()
    feed, viewer = h.peer(), h.peer()
    viewer.send(window())
    feed.send({"c": "tx", "cmds": [publish(1), publish(2)]})
    feed.send(publish(3))
    (frame,) = frames(viewer)
    assert [(m["c"], m.get("matches")) for m in frame if m["c"] in ("count", "tx_end")] == [
        ("count", 2),
        ("tx_end", None),
        ("count", 3),
    ]
