"""Batching fast-lane deliveries into runs never changes what any socket receives."""

from __future__ import annotations

from itertools import groupby
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ..harness import Harness

SESSIONS = 2

orders = st.integers(0, 4)
publishes = st.builds(
    lambda topic, order, qty, delta: {
        "c": "delta_publish" if delta else "publish",
        "t": topic,
        "data": {"order": order, "qty": qty}
        if topic != "trades"
        else {"id": order, "buyer": {"id": "b"}, "q": qty},
    },
    st.sampled_from(["orders", "trades", "news"]),
    orders,
    st.integers(0, 20),
    st.booleans(),
)
subscribes = st.builds(
    lambda command, topic, sub_id, flt, options: {
        "c": command,
        "t": topic,
        "sub_id": sub_id,
        **({"filter": flt} if flt else {}),
        **({"o": options} if options else {}),
    },
    st.sampled_from(["subscribe", "delta_subscribe", "sow_and_subscribe", "sow_and_delta_subscribe"]),
    st.sampled_from(["orders", "trades", "news"]),
    st.sampled_from(["a", "b", "c"]),
    st.sampled_from([None, None, "/qty > 5", "/q < 10", "/order = 1", "/order IN (0, 2)", "/buyer/id = 'b'"]),
    st.sampled_from([None, None, None, "oof", "replace", "oof,replace", "select=[-/qty]", "no_empties"]),
)
others = st.one_of(
    st.builds(lambda sub_id: {"c": "unsubscribe", "sub_id": sub_id}, st.sampled_from(["a", "b", "all"])),
    st.builds(lambda order: {"c": "sow_delete", "t": "orders", "filter": f"/order = {order}"}, orders),
    st.builds(
        lambda topic, cid: {
            "c": "publish",
            "t": topic,
            "data": {"order": 0, "id": 0, "buyer": {"id": "b"}},
            "cid": cid,
        },
        st.sampled_from(["orders", "trades", "news"]),
        st.integers(0, 9),
    ),
    st.just({"c": "heartbeat"}),
)
steps = st.lists(
    st.tuples(st.integers(0, SESSIONS - 1), st.one_of(publishes, publishes, subscribes, others, others)),
    max_size=40,
)


def replay(steps: list[tuple[int, dict[str, Any]]], batched: bool) -> list[list[dict[str, Any]]]:
    hub = Harness(
        topics=[{"name": "orders", "key": ["/order"]}, {"name": "trades", "key": ["/buyer/id", "/id"]}]
    )
    peers = [hub.peer() for _ in range(SESSIONS)]
    received: list[list[dict[str, Any]]] = [[] for _ in range(SESSIONS)]
    frames = (
        [(index, [command for _, command in group]) for index, group in groupby(steps, key=lambda s: s[0])]
        if batched
        else [(index, [command]) for index, command in steps]
    )
    for index, commands in frames:
        received[index].extend(peers[index].send(*commands))
        for number, peer in enumerate(peers):
            received[number].extend(peer.take())
    return received


@settings(max_examples=600, suppress_health_check=[HealthCheck.too_slow])
@given(steps)
def test_batched_frames_deliver_exactly_what_single_commands_do(
    steps: list[tuple[int, dict[str, Any]]],
) -> None:
    assert replay(steps, batched=True) == replay(steps, batched=False)


def test_own_acks_stay_in_order_with_own_deliveries() -> None:
    hub = Harness()
    peer = hub.peer()
    peer.send({"c": "subscribe", "t": "orders", "sub_id": "s"})
    out = peer.send(
        {"c": "publish", "t": "orders", "data": {"order": 1}, "cid": "a"},
        {"c": "publish", "t": "orders", "data": {"order": 2}, "cid": "b"},
    )
    assert [(m["c"], m.get("cid"), m.get("data")) for m in out] == [
        ("p", None, {"order": 1}),
        ("ack", "a", None),
        ("p", None, {"order": 2}),
        ("ack", "b", None),
    ]


def test_runs_across_topics_keep_publish_order() -> None:
    hub = Harness()
    publisher, watcher = hub.peer(), hub.peer()
    watcher.send(
        {"c": "subscribe", "t": "orders", "sub_id": "o"}, {"c": "subscribe", "t": "news", "sub_id": "n"}
    )
    publisher.send(
        {"c": "publish", "t": "orders", "data": {"order": 1}},
        {"c": "publish", "t": "news", "data": {"x": 1}},
        {"c": "publish", "t": "orders", "data": {"order": 2}},
    )
    assert [m["sids"] for m in watcher.take()] == [["o"], ["n"], ["o"]]


def test_a_subscription_added_mid_frame_gets_only_later_publishes() -> None:
    hub = Harness()
    peer = hub.peer()
    peer.send({"c": "subscribe", "t": "orders", "sub_id": "first"})
    out = peer.send(
        {"c": "publish", "t": "orders", "data": {"order": 1}},
        {"c": "subscribe", "t": "orders", "sub_id": "second"},
        {"c": "publish", "t": "orders", "data": {"order": 2}},
    )
    assert [m["sids"] for m in out] == [["first"], ["first", "second"]]


def test_filtered_fast_subscriptions_in_a_run() -> None:
    hub = Harness()
    publisher, watcher = hub.peer(), hub.peer()
    watcher.send({"c": "subscribe", "t": "orders", "sub_id": "big", "filter": "/qty > 10"})
    publisher.send(*[{"c": "publish", "t": "orders", "data": {"order": n, "qty": n * 3}} for n in range(8)])
    assert [m["data"]["order"] for m in watcher.take()] == [4, 5, 6, 7]
