"""What one socket's commands may cost (server/core/session/quota.py): each bound refuses with its reason
before the work is done, leaves nothing behind, and lets ordinary use through."""

from __future__ import annotations

import re

import pytest

from server.core.filters import compile_filter
from server.core.limits import (
    COMMAND_FILTER_WORK,
    MAX_ORDERBY_LENGTH,
    MAX_ORDERBY_TERMS,
    MAX_WINDOW_ROWS,
    ORDER_TERM_UNITS,
    RECORD_UNITS,
    SOCKET_ORDER_RECORDS,
    SOCKET_ORDERS,
    SORT_UNITS,
    TX_WORK_BUDGET,
)
from server.core.session import quota

from ..harness import Harness, publish
from .budget_load import TOPICS, load, processed, window


def test_an_orderby_of_too_many_terms_or_characters_is_refused_before_it_sorts() -> None:
    h = Harness(topics=TOPICS)
    peer = h.peer()
    load(peer, 50)
    many = ",".join(f"/f{n}" for n in range(MAX_ORDERBY_TERMS + 1))
    ack = processed(peer.send({"c": "sow", "t": "orders", "cid": 1, "orderby": many, "top_n": 1}), 1)
    assert ack["reason"] == f"invalid order by: more than {MAX_ORDERBY_TERMS} fields"
    long = "/" + "a" * MAX_ORDERBY_LENGTH
    ack = processed(peer.send({"c": "sow", "t": "orders", "cid": 2, "orderby": long}), 2)
    assert ack["reason"].startswith(f"invalid order by: longer than {MAX_ORDERBY_LENGTH} characters")
    # As many terms as allowed, in a window too.
    enough = ",".join(f"/f{n} DESC" for n in range(MAX_ORDERBY_TERMS))
    assert window(peer, 3, enough)["status"] == "success"


def test_one_socket_cannot_keep_more_than_its_share_of_distinct_window_orders() -> None:
    h = Harness(topics=TOPICS)
    peer = h.peer()
    load(peer, 10)
    for n in range(SOCKET_ORDERS):
        assert window(peer, n, f"/qty, /x{n}")["status"] == "success"
    ack = window(peer, "over", "/qty, /x_over")
    assert ack["reason"].startswith("invalid options: window orders:"), ack
    orders = h.broker.topics["orders"].orders
    assert len(orders) == SOCKET_ORDERS  # the refused window's order is not kept
    # Windows over an order the socket already uses cost nothing more; another socket has its own share.
    assert window(peer, "same", "/qty, /x0", top_n=5)["status"] == "success"
    assert window(h.peer(), "other", "/qty, /x_over")["status"] == "success"
    # A replace swaps its old order out of the count (sub 1 alone uses /x1).
    replaced = window(peer, 1, "/qty, /y1", sub_id=1, o="replace")
    assert replaced["status"] == "success", replaced


def test_a_window_over_groups_keeps_an_order_of_its_own() -> None:
    """A window over groups sorts groups, not the topic's records: with the same orderby as a
    window over records (or over another aggregation's groups), it is another order."""
    h = Harness(topics=TOPICS)
    peer = h.peer()
    load(peer, 10)
    for n in range(SOCKET_ORDERS - 2):
        assert window(peer, n, f"/qty, /x{n}")["status"] == "success"
    assert window(peer, "records", "/qty")["status"] == "success"
    assert window(peer, "groups", "/qty", grouping=["/qty"])["status"] == "success"
    windows = [sub.window for sub in peer.session.subscriptions.values()]
    assert len({id(window.order) for window in windows if window is not None}) == SOCKET_ORDERS
    ack = window(peer, "other groups", "/qty", grouping=["/qty", "/order"])
    assert ack["reason"].startswith("invalid options: window orders:"), ack
    # Another window over the same groups and order shares it.
    assert window(peer, "same groups", "/qty", top_n=3, grouping=["/qty"])["status"] == "success"


def test_the_records_a_sockets_orders_hold_are_bounded_besides_the_largest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    budget = 1000  # as SOCKET_ORDER_RECORDS, scaled down so the test loads a small topic
    monkeypatch.setattr(quota, "SOCKET_ORDER_RECORDS", budget)
    h = Harness(topics=TOPICS)
    peer = h.peer()
    total = budget * 7 // 10
    load(peer, total)
    # One view of the whole topic is always possible, however big; a copy of half of it too...
    assert window(peer, "all", "/qty")["status"] == "success"
    assert window(peer, "half", "/order DESC", filter=f"/order < {total // 2}")["status"] == "success"
    # ...but not another copy of the whole.
    ack = window(peer, "again", "/qty DESC")
    assert ack["reason"].startswith("invalid options: window orders:"), ack
    assert f"at most {budget} besides the largest" in ack["reason"]
    # Giving one up makes room.
    peer.send({"c": "unsubscribe", "sub_id": "half"})
    assert window(peer, "again", "/qty DESC")["status"] == "success"
    assert SOCKET_ORDER_RECORDS > 0  # the real bound is the one documented


def test_a_transaction_is_bounded_by_the_work_of_its_one_step_not_its_count() -> None:
    h = Harness(topics=TOPICS)
    peer, watcher = h.peer(), h.peer()
    records = 20_000
    load(peer, records)
    watcher.send({"c": "subscribe", "t": "orders", "sub_id": "w"})
    deletes = [{"c": "sow_delete", "t": "orders", "filter": f"/qty = {n % 97}"} for n in range(600)]
    got = peer.send({"c": "tx", "cid": "t", "cmds": deletes})
    ack = processed(got, "t")
    # Each delete by filter reads the whole topic and evaluates its filter on every record:
    # refused at the command that passes the budget, before anything is applied.
    match = re.fullmatch(r"bad message: cmds\[(\d+)\]: (.*)", ack["reason"])
    assert match is not None, ack
    per_delete = records * (RECORD_UNITS + compile_filter("/qty = 1").cost)
    assert 0 < int(match[1]) <= TX_WORK_BUDGET // per_delete
    assert match[2].startswith(f"this transaction would do more than {TX_WORK_BUDGET} units of work")
    assert len(h.broker.topics["orders"].records) == records  # nothing applied
    assert watcher.take() == []
    # What the budget allows still runs: deletes by key, many publishes, a few deletes by filter.
    allowed = [{"c": "sow_delete", "t": "orders", "sow_keys": [f"k{n}"]} for n in range(4000)]
    allowed += [publish(n, qty=1) for n in range(4000)]
    allowed += [{"c": "sow_delete", "t": "orders", "filter": "/qty = 96"}] * 3
    ack = processed(peer.send({"c": "tx", "cid": "ok", "cmds": allowed}), "ok")
    assert ack["status"] == "success", ack["reason"]


def test_a_transaction_over_the_budget_from_the_start_still_names_its_first_bad_command() -> None:
    # Refused before any pass over the records (tx_work.TransactionWork.doomed_at), yet checked in
    # order: a command refused for its own reason before the budget is passed is the one named.
    h = Harness(topics=TOPICS)
    peer = h.peer()
    load(peer, 20_000)
    deletes = [{"c": "sow_delete", "t": "orders", "filter": f"/qty = {n % 97}"} for n in range(600)]
    bad = {"c": "sow_delete", "t": "orders", "filter": "/qty = = 1"}
    ack = processed(peer.send({"c": "tx", "cid": "t", "cmds": [*deletes[:3], bad, *deletes[3:]]}), "t")
    assert ack["reason"].startswith("bad filter: cmds[3]: "), ack
    unkept = {"c": "sow_delete", "t": "nowhere", "filter": "/qty = 1"}
    ack = processed(peer.send({"c": "tx", "cid": "u", "cmds": [deletes[0], unkept, *deletes]}), "u")
    assert ack["reason"].startswith("invalid topic: cmds[1]"), ack
    assert len(h.broker.topics["orders"].records) == 20_000  # nothing applied


def test_a_transaction_counts_the_deliveries_its_changes_make() -> None:
    # 10,000 publishes in one transaction to a topic whose subscriptions carry costly filters held
    # every other socket for 12 s: each change is evaluated for every subscription in that step.
    h = Harness(topics=TOPICS)
    publisher = h.peer()
    batch = {
        "c": "tx",
        "cid": "tx",
        "cmds": [{"c": "publish", "t": "fills", "data": {"id": n}} for n in range(10_000)],
    }
    assert processed(publisher.send(batch), "tx")["status"] == "success"  # nobody listens: cheap
    costly = " OR ".join(["/s LIKE '(a|b)*c'"] * 20)
    for n in range(5):
        h.peer().send({"c": "subscribe", "t": "fills", "sub_id": n, "filter": costly})
    ack = processed(publisher.send({**batch, "cid": "again"}), "again")
    assert ack["reason"].startswith("bad message: cmds["), ack
    assert "units of work in one step" in ack["reason"]


def test_a_live_window_holds_at_most_ten_thousand_rows() -> None:
    peer = Harness(topics=TOPICS).peer()
    ack = window(peer, "big", "/qty", top_n=MAX_WINDOW_ROWS + 1)
    assert (
        ack["reason"] == f"invalid options: top_n of a live window is at most {MAX_WINDOW_ROWS} (got 10001)"
    )
    assert window(peer, "ok", "/qty", top_n=MAX_WINDOW_ROWS)["status"] == "success"
    # A one-off query is no window: its top_n is not bounded so.
    ack = processed(peer.send({"c": "sow", "t": "orders", "cid": "q", "top_n": 10**6}), "q")
    assert ack["status"] == "success"


def test_a_pass_of_a_costly_filter_over_a_big_topic_is_refused_before_it_runs() -> None:
    h = Harness(topics=TOPICS)
    peer = h.peer()
    load(peer, 20_000)
    costly = " OR ".join(["/s LIKE '(a|b)*c'"] * 400)  # held every socket for 100 s
    cheap = "/qty = 3 AND /order > 10"
    commands = [
        {"c": "sow", "t": "orders", "cid": "sow", "filter": costly, "top_n": 1},
        {"c": "sow_and_subscribe", "t": "orders", "cid": "sas", "filter": costly},
        {"c": "sow_delete", "t": "orders", "cid": "del", "filter": costly},
        {"c": "tx", "cid": "tx", "cmds": [{"c": "sow_delete", "t": "orders", "filter": costly}]},
    ]
    got = peer.send(*commands)
    reasons = {command["cid"]: processed(got, command["cid"])["reason"] for command in commands}
    too_costly = "too costly over 20000 records: 40801 units a record, at most 30000000 units"
    assert reasons["sow"].startswith(f"bad filter: {too_costly}")
    assert reasons["del"].startswith(f"bad filter: {too_costly}")
    # In a transaction, the transaction's own budget refuses it first (it counts the same pass).
    assert reasons["tx"].startswith("bad message: cmds[0]: this transaction would do more than")
    # A subscription's filter is refused by the socket's filter budget first (it runs per publish).
    assert reasons["sas"].startswith("invalid options: filter budget"), reasons["sas"]
    assert len(h.broker.topics["orders"].records) == 20_000
    assert h.broker.topics["orders"].subscribers == {}  # the refused subscription was not added
    # Cheap filters over the same topic, and the costly one over a small topic, pass.
    assert (
        processed(peer.send({"c": "sow", "t": "orders", "cid": 1, "filter": cheap}), 1)["status"] == "success"
    )
    peer.send({"c": "publish", "t": "fills", "data": {"id": 1, "s": "abc"}})
    got = peer.send({"c": "sow", "t": "fills", "cid": 2, "filter": costly})
    assert [m["data"]["id"] for m in got if m["c"] == "sow"] == [1]


def test_only_a_pass_over_the_topic_is_charged(monkeypatch: pytest.MonkeyPatch) -> None:
    # Scaled down: a window sorts what it selects, so 200 records x (a filter of cost 7 and one
    # sort term) fit a budget of 4,000, 250 records do not.
    monkeypatch.setattr(quota, "COMMAND_FILTER_WORK", 4000)
    h = Harness(topics=TOPICS)
    peer = h.peer()
    load(peer, 200)
    text = "/qty > 1 AND /order > 0"
    sorted_cost = compile_filter(text).cost + SORT_UNITS + ORDER_TERM_UNITS
    assert sorted_cost * 200 <= 4000 < sorted_cost * 250
    first = {
        "c": "sow_and_subscribe",
        "t": "orders",
        "sub_id": "w",
        "filter": text,
        "orderby": "/qty",
        "top_n": 5,
    }
    assert processed(peer.send({**first, "cid": 1}), 1)["status"] == "success"
    load(peer, 250)
    # Moving the window reads its order, not the topic; so does another window over that order.
    moved = {**first, "cid": 2, "skip_n": 10, "o": "replace"}
    assert processed(peer.send(moved), 2)["status"] == "success"
    other = h.peer()
    assert processed(other.send({**first, "cid": 3}), 3)["status"] == "success"
    # A one-off sorted query, or a window with its own order, is a pass over the topic that sorts.
    ack = processed(peer.send({"c": "sow", "t": "orders", "cid": 4, "filter": text, "orderby": "/qty"}), 4)
    assert ack["reason"].startswith("invalid order by: too costly to sort over 250 records"), ack
    ack = processed(peer.send({**first, "cid": 5, "sub_id": "x", "orderby": "/order"}), 5)
    assert ack["reason"].startswith("invalid order by: too costly to sort over 250 records"), ack
    # The same query unsorted is the filter's pass alone: it fits.
    ack = processed(peer.send({"c": "sow", "t": "orders", "cid": 6, "filter": text}), 6)
    assert ack["status"] == "success", ack


def test_an_order_of_many_terms_over_a_big_topic_is_refused_before_it_is_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """16 sort terms over 200,000 records took 2.6 s to build (every record's key reads every
    term): at a million, tens of seconds that every socket waited for. Scaled down: 1,000 records
    and a budget of 30,000 units hold one sort term (11 units a record), not sixteen (56)."""
    monkeypatch.setattr(quota, "COMMAND_FILTER_WORK", 30_000)
    h = Harness(topics=TOPICS)
    peer = h.peer()
    load(peer, 1_000)
    many = ", ".join(f"/f{n}" for n in range(16))
    assert (SORT_UNITS + ORDER_TERM_UNITS) * 1_000 <= 30_000 < (SORT_UNITS + 16 * ORDER_TERM_UNITS) * 1_000
    window = {"c": "sow_and_subscribe", "t": "orders", "sub_id": "w", "top_n": 5}
    ack = processed(peer.send({**window, "orderby": many, "cid": 1}), 1)
    assert ack["reason"].startswith("invalid order by: too costly to sort over 1000 records: 56 units"), ack
    ack = processed(peer.send({"c": "sow", "t": "orders", "orderby": many, "cid": 2}), 2)
    assert ack["reason"].startswith("invalid order by: too costly to sort over 1000 records"), ack
    assert h.broker.topics["orders"].orders.idle == 0 and not len(h.broker.topics["orders"].orders)
    assert processed(peer.send({**window, "orderby": "/qty", "cid": 3}), 3)["status"] == "success"
    assert COMMAND_FILTER_WORK >= (SORT_UNITS + ORDER_TERM_UNITS) * 1_000_000, "one term over a million fits"
