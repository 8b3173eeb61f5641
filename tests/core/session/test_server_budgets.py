"""What the whole server's views may hold, across sockets (server/core/session/held.py): many sockets,
each within its own budget, cannot together keep more window orders or aggregated groups than the
server's bounds; idle orders give way first; a refusal leaves nothing behind."""

from __future__ import annotations

import pytest

from server.core.limits import AGGREGATION_GROUPS_FLOOR, SERVER_GROUPS, SERVER_ORDER_RECORDS
from server.core.session import held

from ..harness import Harness
from .budget_load import TOPICS, load, processed, window

BOUND = 1000  # as the server's bounds, scaled down so that the tests load small topics
MAX_BY_ORDER = ["/order", "MAX(/qty) AS /max"]


def test_orders_across_sockets_are_bounded_and_idle_ones_give_way(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(held, "SERVER_ORDER_RECORDS", BOUND)
    h = Harness(topics=TOPICS)
    first, second, third = h.peer(), h.peer(), h.peer()
    load(first, 700)
    topics = list(h.broker.topics.values())
    assert window(first, "a", "/qty")["status"] == "success"
    # Another socket's order of the same records is within its own budget, not the server's.
    ack = window(second, "b", "/qty DESC")
    assert ack["reason"] == (
        "invalid options: window orders: the server's windows keep 700 records in their orders, "
        f"and this one would keep 700 more, at most {BOUND} in all"
    )
    assert held.order_records(topics) == 700  # the refused one left nothing
    # A window over an order that exists costs the server nothing: it shares it.
    assert window(third, "shared", "/qty", top_n=5)["status"] == "success"
    # A new order that is small fits beside it: its size is worked out when its topic is too many.
    assert window(second, "few", "/qty DESC", filter="/order < 100")["status"] == "success"
    assert held.order_records(topics) == 800
    # Orders no window uses are kept for the next window over them, until the room is needed.
    first.send({"c": "unsubscribe", "sub_id": "a"})
    third.send({"c": "unsubscribe", "sub_id": "shared"})
    assert held.order_records(topics) == 800  # the /qty order is idle, still kept
    assert window(second, "b", "/qty DESC, /order")["status"] == "success"
    assert held.order_records(topics) == 800  # the idle one dropped, the new one kept
    assert SERVER_ORDER_RECORDS > 0  # the real bound is the one documented


def test_groups_across_sockets_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(held, "SERVER_GROUPS", BOUND)
    h = Harness(topics=TOPICS)
    first, second = h.peer(), h.peer()
    load(first, 700)
    topics = list(h.broker.topics.values())
    orders = h.broker.topics["orders"]
    by_order = {"c": "sow_and_subscribe", "t": "orders", "grouping": ["/order"]}
    first_view = {**by_order, "cid": "a", "sub_id": "a", "projection": ["/order", "SUM(/qty) AS /sum"]}
    ack = processed(first.send(first_view), "a")
    assert ack["status"] == "success"
    assert held.groups(topics) == 700
    derived = dict(orders.derived)
    # Another projection of the same grouping keeps groups of its own; so does a one-shot ``sow``.
    for cid, command in (("b", "sow_and_subscribe"), ("c", "sow")):
        query = {**by_order, "c": command, "cid": cid, "sub_id": cid, "projection": MAX_BY_ORDER}
        ack = processed(second.send(query), cid)
        assert ack["reason"] == (
            "invalid options: aggregations: the server's aggregations keep 700 groups, and this "
            f"one would keep 700 more, at most {BOUND} in all"
        ), ack
        assert held.groups(topics) == 700 and orders.derived == derived  # nothing left behind
    # Few groups fit beside them; and when the first view goes, its groups go with it.
    by_qty = {**by_order, "cid": "q", "sub_id": "q", "grouping": ["/qty"]}
    by_qty["projection"] = ["/qty", "COUNT(/order) AS /n"]
    assert processed(second.send(by_qty), "q")["status"] == "success"
    first.send({"c": "unsubscribe", "sub_id": "a"})
    query = {**by_order, "cid": "b", "sub_id": "b", "projection": MAX_BY_ORDER}
    assert processed(second.send(query), "b")["status"] == "success"
    assert held.groups(topics) == 700 + 97
    assert SERVER_GROUPS > 0


def test_a_topics_configured_orders_are_not_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(held, "SERVER_ORDER_RECORDS", BOUND)
    h = Harness(topics=[{"name": "orders", "key": ["/order"], "orders": ["/qty", "/qty DESC"]}])
    peer = h.peer()
    load(peer, 700)
    topics = list(h.broker.topics.values())
    assert held.order_records(topics) == 0  # 1,400 records in the operator's two orders
    assert window(peer, "kept", "/qty")["status"] == "success"  # reads a kept order
    assert window(peer, "own", "/order DESC")["status"] == "success"  # an order of its own
    assert held.order_records(topics) == 700


def test_a_group_weighs_its_records_field_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every group record holds its projection's field names: long ones make each group count as
    more groups, and an aggregation may weigh no more groups than its topic has records (or
    AGGREGATION_GROUPS_FLOOR): 64 KB of names over 20,000 groups was 1.3 GB for one ``sow``."""
    monkeypatch.setattr(held, "SERVER_GROUPS", BOUND)
    h = Harness(topics=TOPICS)
    peer = h.peer()
    load(peer, 300)
    topics = list(h.broker.topics.values())
    long_name = "/" + "n" * 500  # (a group: 440 bytes and one more group per 440 of its names)
    view = {"c": "sow_and_subscribe", "t": "orders", "grouping": ["/order"], "cid": "a", "sub_id": "a"}
    ack = processed(peer.send({**view, "projection": ["/order", f"SUM(/qty) AS {long_name}"]}), "a")
    assert ack["status"] == "success"
    assert held.groups(topics) == 600
    longer = {**view, "cid": "b", "sub_id": "b", "projection": ["/order", f"MAX(/qty) AS {long_name}x"]}
    ack = processed(peer.send(longer), "b")
    assert ack["reason"] == (
        "invalid options: aggregations: the server's aggregations keep 600 groups, and this one "
        f"would keep 600 more, at most {BOUND} in all"
    )
    huge = ["/order", "COUNT(*) AS /" + "n" * 20_000]  # (a 64 KB projection is allowed: a small topic's)
    for command in ("sow", "sow_and_subscribe"):
        ack = processed(peer.send({**view, "c": command, "cid": "c", "sub_id": "c", "projection": huge}), "c")
        assert ack["reason"] == (
            "invalid options: aggregations: this one's 300 groups would weigh as 13800 (a group "
            f"counts once more for each 440 bytes of its field names and text literals), more than the "
            f"{AGGREGATION_GROUPS_FLOOR} its topic allows"
        ), ack
    assert held.groups(topics) == 600
    few = {**view, "grouping": ["/qty"], "cid": "d", "sub_id": "d", "projection": ["/qty", huge[1]]}
    monkeypatch.setattr(held, "SERVER_GROUPS", SERVER_GROUPS)
    assert processed(peer.send(few), "d")["status"] == "success"


def test_nested_field_names_are_weighed_once_as_a_group_record_holds_them() -> None:
    """15 fields under /position/instrument/detail hold each level's name once: a group a record
    over 6,000 records is a view a desk opens, not one past its topic's allowance."""
    h = Harness(topics=TOPICS)
    peer = h.peer()
    load(peer, 6000)
    fields = [f"MAX(/qty) AS /position/instrument/detail/f{n:02}" for n in range(15)]
    view = {"c": "sow_and_subscribe", "t": "orders", "grouping": ["/order"], "cid": "a", "sub_id": "a"}
    ack = processed(peer.send({**view, "projection": ["/order", *fields]}), "a")
    assert ack["status"] == "success", ack


@pytest.mark.parametrize(
    "value",
    ["'{text}'", "CONCAT(/desk, '{text}')", "COALESCE(/nothing, '{text}')", "MAX('{text}')"],
)
def test_a_group_weighs_the_text_literals_its_values_are_made_of(value: str) -> None:
    """A literal that is part of a field's value is in every group record, as its names are: two
    of 15,000 characters in a group a record over 300 records weigh past the topic's allowance (64
    KB of them over 6,000 records held 384 MB); a literal that only decides a truth is not."""
    h = Harness(topics=TOPICS)
    peer = h.peer()
    load(peer, 300)
    text = "t" * 15_000  # (an expression is at most 16 KB)
    view = {"c": "sow", "t": "orders", "grouping": ["/order"], "cid": "a"}
    fields = [f"{value.format(text=text)} AS /{name}" for name in ("v", "w")]
    ack = processed(peer.send({**view, "projection": ["/order", *fields]}), "a")
    assert ack["reason"] == (
        "invalid options: aggregations: this one's 300 groups would weigh as 20700 (a group counts "
        "once more for each 440 bytes of its field names and text literals), more than the "
        f"{AGGREGATION_GROUPS_FLOOR} its topic allows"
    ), ack
    compared = [f"LENGTH(/desk) = LENGTH('{text}') AS /{name}" for name in ("v", "w")]
    assert processed(peer.send({**view, "projection": ["/order", *compared]}), "a")["status"] == "success"
