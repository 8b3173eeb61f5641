"""Kept orders (docs/protocol.md, Kept orders): a topic's configured ``orders`` are kept from the
start, so a window by one of those sorts opens as a move; they change nothing a client sees."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest

from server.core.aggregate.view import aggregations_of
from server.core.broker.applying import load
from server.core.errors import ConfigError
from server.core.filters import parse_orderby
from server.core.handlers import recovery
from server.core.limits import IDLE_ORDERS, MAX_KEPT_ORDERS
from server.core.records.keys import KeySpec
from server.core.records.version import RecordVersion
from server.core.settings.config import parse_config

from ..harness import Harness, Peer, entries_of
from .windows_cases import AUTH, publish

KEPT = ["/price DESC", "", "/lvl, /price"]


def topics(orders: list[str] | None = None, durable: bool = False) -> list[dict[str, Any]]:
    topic: dict[str, Any] = {"name": "t", "key": ["/id"], "durable": durable}
    if orders is not None:
        topic["orders"] = orders
    return [topic]


def window(peer: Peer, sub_id: str = "w", **fields: Any) -> list[dict[str, Any]]:
    return peer.send(
        {"c": "sow_and_subscribe", "t": "t", "sub_id": sub_id, "o": "oof,positions,count", **fields}
    )


def random_window(
    rng: random.Random, peer: Peer, sub_id: str, orders: list[str], filters: list[str], filtered: float
) -> list[dict[str, Any]]:
    """A window of a random range, by one of ``orders``, with one of ``filters`` at the chance
    ``filtered``."""
    fields: dict[str, Any] = {"top_n": rng.randrange(1, 6), "skip_n": rng.randrange(4)}
    orderby = rng.choice(orders)
    if orderby:
        fields["orderby"] = orderby
    if rng.random() < filtered:
        fields["filter"] = rng.choice(filters)
    return window(peer, sub_id, **fields)


def rows(messages: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(m["data"]["id"], m["pos"]) for m in messages if m["c"] == "sow"]


@pytest.mark.parametrize(
    ("orders", "error"),
    [
        (["/price DSC"], "topic 't'.orders: '/price DSC'"),
        (["/a", "/a"], "named before"),
        (["/qty DESC", "/qty  desc"], "'/qty  desc' names an order named before"),
        (["", " "], "named before"),
        ([f"/f{n}" for n in range(MAX_KEPT_ORDERS + 1)], f"at most {MAX_KEPT_ORDERS}"),
        ("/price", "expected a list of orderby texts"),
    ],
)
def test_a_bad_orders_setting_stops_the_start(orders: Any, error: str) -> None:
    with pytest.raises(ConfigError, match=error):
        parse_config({"topic": [{"name": "t", "key": ["/id"], "orders": orders}]})


def test_a_kept_order_is_followed_from_the_start_and_taken_by_windows_of_its_sort() -> None:
    h = Harness(topics=topics(KEPT))
    feed, first, second = h.peer(), h.peer(), h.peer()
    feed.send(*[publish(n, price=n) for n in range(10)], {"c": "sow_delete", "t": "t", "filter": "/id = 9"})
    orders = h.broker.topics["t"].orders
    assert len(orders) == len(KEPT) and orders.idle == 0
    kept = {order.share[0]: order for order in orders}
    # The same sort written another way shares it: orders are shared by what they sort by.
    got = window(first, top_n=3, orderby="/price  desc")
    assert rows(got) == [(8, 1), (7, 2), (6, 3)] and got[-1]["matches"] == 9
    assert first_window(h, "w").order is kept[parse_orderby("/price DESC")]
    window(second, top_n=2, skip_n=3)
    assert first_window(h, "w", second).order is kept[None], "no orderby: the key order"
    for peer in (first, second):
        peer.send({"c": "unsubscribe", "sub_id": "w"})
    for orderby in ["/a", "/b", "/c", "/d", "/e", "/f"]:  # idle orders pushing the oldest out
        window(first, top_n=1, orderby=orderby)
        first.send({"c": "unsubscribe", "sub_id": "w"})
    assert {order.share[0] for order in orders} >= set(kept) and orders.idle == IDLE_ORDERS


def first_window(h: Harness, sub_id: str, peer: Peer | None = None) -> Any:
    topic = h.broker.topics["t"]
    for order in topic.orders:
        for window in order.windows:
            if window.subscription.sub_id == sub_id and (
                peer is None or window.subscription.session is peer.session
            ):
                return window
    raise AssertionError("no such window")


def scenario(h: Harness, seed: int) -> list[list[dict[str, Any]]]:
    """Random publishes, deletes and windows (with and without filters, as a user whose
    entitlement hides rows and as one who sees all); everything each window peer received."""
    rng = random.Random(seed)
    feed = h.peer()
    peers = [h.peer() for _ in range(3)]
    peers[0].send({"c": "logon", "cid": "l", "user_id": "low", "pw": "pw"})
    for peer in peers[1:]:
        peer.send({"c": "logon", "cid": "l", "user_id": "all", "pw": "pw"})
    feed.send({"c": "logon", "cid": "l", "user_id": "all", "pw": "pw"})
    seen: list[list[dict[str, Any]]] = [[] for _ in peers]
    for step in range(60):
        choice = rng.random()
        if choice < 0.6 or step < 10:
            n = rng.randrange(30)
            feed.send(publish(n, price=rng.randrange(8), lvl=rng.randrange(9)))
        elif choice < 0.7:
            feed.send({"c": "sow_delete", "t": "t", "filter": f"/id = {rng.randrange(30)}"})
        else:
            who = rng.randrange(len(peers))
            orders = [*KEPT, "/lvl DESC"]
            filters = ["/lvl > 3", "/price < 5", "/id >= 10"]
            seen[who] += random_window(rng, peers[who], f"w{step}", orders, filters, filtered=0.5)
        for who, peer in enumerate(peers):
            seen[who] += peer.take()
    return seen


@pytest.mark.parametrize("seed", range(12))
def test_kept_orders_change_nothing_a_client_sees(seed: int) -> None:
    """The same commands against a topic that keeps orders and one that keeps none: every window
    (by a kept sort or not, filtered or not, through an entitlement or not) gets the same messages."""
    kept = scenario(Harness(topics=topics(KEPT), auth=AUTH), seed)
    plain = scenario(Harness(topics=topics(), auth=AUTH), seed)
    assert by_view(kept) == by_view(plain)


def by_view(seen: list[list[dict[str, Any]]]) -> list[dict[str, list[bytes]]]:
    """What each view of each peer received, in order (one change's messages to different views
    may come in another order: which view's order is asked first is not part of the protocol)."""
    views: list[dict[str, list[bytes]]] = []
    for messages in seen:
        streams: dict[str, list[bytes]] = {}
        for message in messages:
            for view in message.get("sids") or [message.get("query_id") or message.get("cid")]:
                streams.setdefault(str(view), []).append(orjson.dumps({**message, "sids": None}))
        views.append(streams)
    return views


def test_kept_orders_are_made_again_after_recovery_and_a_snapshot_load() -> None:
    h = Harness(topics=topics(KEPT, durable=True))
    feed = h.peer()
    feed.send(*[publish(n, price=n, lvl=n) for n in range(8)])
    snapshot = recovery.capture(h.broker)
    feed.send(publish(20, price=99, lvl=0), {"c": "sow_delete", "t": "t", "filter": "/id = 3"})
    tail = [
        [e.lsn, e.op, e.topic, e.key, e.data, e.client_name, e.seq, e.timestamp, e.expires_at]
        for e in entries_of(h)
    ]
    fresh = Harness(topics=topics(KEPT, durable=True))
    recovery.restore(fresh.broker, snapshot, orjson.loads(orjson.dumps(tail)))
    assert rows(window(fresh.peer(), top_n=3, orderby="/price DESC")) == [(20, 1), (7, 2), (6, 3)]
    assert rows(window(fresh.peer(), top_n=2, skip_n=4, orderby="/price DESC")) == [(4, 1), (2, 2)]
    # A cluster node loading a snapshot nobody listens to (no fan-out per record).
    node = Harness(topics=topics(KEPT))
    key = KeySpec.parse(["/id"]).sow_key
    versions = [RecordVersion(key({"id": n}), {"id": n, "price": n}, n + 1, 0.0) for n in range(5)]
    load(node.broker.topics["t"], versions, 5, node.broker.timers)
    assert rows(window(node.peer(), top_n=2, orderby="/price DESC")) == [(4, 1), (3, 2)]


def test_a_topic_of_groups_keeps_none_of_its_sources_orders() -> None:
    """The configured orders sort the topic's records; an aggregation's groups are records of
    another shape, sorted only as their windows ask."""
    h = Harness(topics=topics(KEPT))
    feed, peer = h.peer(), h.peer()
    feed.send(*[publish(n, price=n, lvl=n % 3) for n in range(6)])
    got = peer.send(
        {
            "c": "sow_and_subscribe",
            "t": "t",
            "sub_id": "g",
            "grouping": ["/lvl"],
            "projection": ["/lvl", "SUM(/price) AS /price"],
        }
    )
    assert len([m for m in got if m["c"] == "sow"]) == 3
    (aggregation,) = aggregations_of(h.broker.topics["t"])
    assert len(aggregation.topic.orders) == 0


MIXED = [0, 1, 2, 3, 7, 7.0, -0.0, 2**53 + 1, 1e20, "7", " 7", "1e3", "a", "b", "é", "", None, True, False]
MIXED += [[3, 8], [8, 3], ["a", 2], [7], [], {"x": 1}]
NARROW = [
    "/price = 7",
    "/price IN ('7', 2, TRUE)",
    "/price > 'a'",
    "/price < 1",
    "7 <= /price",
    "/lvl BETWEEN 7 AND 8",
    "/price = 'b'",
    "/lvl = 8 AND /price != 3",
    "/price BETWEEN 'a' AND 'é'",
    "/price >= 1e20",
    "/price < '\x1c7'",
]


def narrow_scenario(h: Harness, seed: int) -> list[list[dict[str, Any]]]:
    """As ``scenario``, with mixed values (numbers, numeric and other texts, booleans, NULL,
    arrays, objects) and filters narrow enough on a kept order's first field that its range finds
    the window's records (ranges.py): the scenario above never leaves a quarter of the topic."""
    rng = random.Random(seed)
    feed = h.peer()
    peers = [h.peer() for _ in range(3)]
    peers[0].send({"c": "logon", "cid": "l", "user_id": "low", "pw": "pw"})
    for peer in [feed, *peers[1:]]:
        peer.send({"c": "logon", "cid": "l", "user_id": "all", "pw": "pw"})
    seen: list[list[dict[str, Any]]] = [[] for _ in peers]
    for step in range(120):
        choice = rng.random()
        if choice < 0.6 or step < 40:
            level = rng.choice([rng.randrange(9), rng.choice(MIXED)])
            feed.send(publish(rng.randrange(60), price=rng.choice(MIXED), lvl=level))
        elif choice < 0.7:
            feed.send({"c": "sow_delete", "t": "t", "filter": f"/id = {rng.randrange(60)}"})
        else:
            who = rng.randrange(len(peers))
            orders = [*KEPT, "/lvl DESC", "/price", "/price DESC, /id"]
            seen[who] += random_window(rng, peers[who], f"w{step}", orders, NARROW, filtered=1.0)
        for who, peer in enumerate(peers):
            seen[who] += peer.take()
    return seen


@pytest.mark.parametrize("seed", range(8))
def test_windows_found_through_a_kept_orders_range_change_nothing_a_client_sees(seed: int) -> None:
    kept = narrow_scenario(Harness(topics=topics([*KEPT, "/price"]), auth=AUTH), seed)
    plain = narrow_scenario(Harness(topics=topics(), auth=AUTH), seed)
    assert by_view(kept) == by_view(plain)
