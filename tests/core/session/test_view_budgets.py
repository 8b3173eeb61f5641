"""What aggregated views, resumes and replaces may cost (server/core/session/quota.py): the
pass each makes, and what each change of their topic costs, are charged before the work is done."""

from __future__ import annotations

from typing import Any

import pytest

from server.core.filters import compile_filter
from server.core.limits import SOCKET_FILTER_BUDGET, SOCKET_ORDERS
from server.core.session import quota

from ..harness import Harness, Peer
from .budget_load import TOPICS, load, processed, window


def test_an_aggregation_is_charged_for_its_projection_as_well_as_its_filter() -> None:
    """63 maxima of arithmetic over 50,000 records held every socket for 15 s: the first pass of an
    aggregation (a subscription's, a one-off sow's) counts each projected field's argument too."""
    h = Harness(topics=TOPICS)
    peer = h.peer()
    load(peer, 20_000)
    heavy = ["/side"] + [
        f"MAX(/qty * /order + /qty * {n} - /order * /qty / 3 + ABS(/qty - {n})) AS /f{n}" for n in range(63)
    ]
    light = ["/side", "SUM(/qty) AS /qty", "MIN(/qty) AS /low", "MAX(/qty) AS /high", "COUNT(*) AS /n"]
    for cid, command in enumerate(["sow", "sow_and_subscribe"]):
        query = {"c": command, "t": "orders", "cid": cid, "grouping": ["/side"]}
        ack = processed(peer.send({**query, "sub_id": f"h{cid}", "projection": heavy}), cid)
        assert ack["reason"].startswith("invalid options: projection too costly over 20000 records"), ack
        ack = processed(
            peer.send({**query, "sub_id": f"l{cid}", "projection": light, "cid": f"l{cid}"}), f"l{cid}"
        )
        assert ack["status"] == "success", ack
    assert len(h.broker.topics["orders"].derived) == 1, "the refused aggregation was not made"
    # Its filter alone is charged as a filter pass is (bad filter), before its projection.
    costly = " OR ".join(["/s LIKE '(a|b)*c'"] * 400)
    ack = processed(
        peer.send({"c": "sow", "t": "orders", "cid": "f", "grouping": ["/side"], "filter": costly}), "f"
    )
    assert ack["reason"].startswith("bad filter: too costly over 20000 records"), ack


def test_an_aggregation_that_reads_nothing_new_is_not_charged_a_pass() -> None:
    """Columns over a shared group table that has every input they need cost no pass, so they are
    not refused for one; columns that add an input are charged the pass that reads it."""
    h = Harness(topics=TOPICS)
    peer = h.peer()
    load(peer, 20_000)
    argument = "/qty * /order + /qty * 3 - /order * /qty / 3 + ABS(/qty - 3)"
    one = ["/side", f"SUM({argument}) AS /total"]
    # The same input 63 times over (SUM, AVG and the deviations of one argument share it): what
    # a pass of it would cost is past the budget.
    many = ["/side"] + [f"{('SUM', 'AVG')[n % 2]}({argument}) AS /f{n}" for n in range(63)]
    query = {"c": "sow_and_subscribe", "t": "orders", "grouping": ["/side"]}
    assert (
        processed(peer.send({**query, "sub_id": "a", "cid": 1, "projection": one}), 1)["status"] == "success"
    )
    ack = processed(peer.send({**query, "sub_id": "b", "cid": 2, "projection": many}), 2)
    assert ack["status"] == "success", ack
    ack = processed(
        peer.send({**query, "sub_id": "c", "cid": 3, "projection": [*many[:-1], "MAX(/qty) AS /top"]}), 3
    )
    assert ack["reason"].startswith("invalid options: projection too costly over 20000 records"), ack
    # Without the shared table, the same columns pay for their pass.
    peer.send({"c": "unsubscribe", "sub_id": "a"}, {"c": "unsubscribe", "sub_id": "b"})
    ack = processed(peer.send({**query, "sub_id": "d", "cid": 4, "projection": many}), 4)
    assert ack["reason"].startswith("invalid options: projection too costly over 20000 records"), ack


def test_a_refused_view_adds_no_inputs_to_a_shared_group_table() -> None:
    """A view refused after it joined a shared group table (here: past its socket's window orders)
    leaves the table as it found it: the inputs it added would be read on every change of the
    topic until the table's last view left, count towards the table's cap, and spare the next view
    that needs them its pass."""
    h = Harness(topics=TOPICS)
    keeper, peer = h.peer(), h.peer()
    load(keeper, 10)
    keep = {"c": "sow_and_subscribe", "t": "orders", "sub_id": "k", "cid": "k", "grouping": ["/qty"]}
    assert (
        processed(keeper.send({**keep, "projection": ["/qty", "SUM(/order) AS /s"]}), "k")["status"]
        == "success"
    )
    (index,) = h.broker.topics["orders"].derived.values()
    inputs = index.table.inputs  # type: ignore[attr-defined]
    for n in range(SOCKET_ORDERS):
        assert window(peer, n, f"/qty, /x{n}", sub_id=f"w{n}")["status"] == "success"
    projection = ["/qty", "MAX(/order * 2) AS /m", "COUNT_DISTINCT(/order) AS /d"]
    ack = window(peer, "groups", "/m", grouping=["/qty"], projection=projection, sub_id="g")
    assert ack["reason"].startswith("invalid options: window orders:"), ack
    assert list(h.broker.topics["orders"].derived.values()) == [index]
    assert index.table.inputs == inputs  # type: ignore[attr-defined]


def test_a_resume_is_charged_the_pass_a_snapshot_is(monkeypatch: pytest.MonkeyPatch) -> None:
    """A resume whose history does not reach back reads the whole topic: 5.5 to 9.7 s over 30,000
    records with a filter a snapshot was refused for. Scaled down: a budget one unit short of the
    filter over 1,000 records."""
    text = "/qty > 1 AND /order > 0"
    cost = compile_filter(text).cost
    monkeypatch.setattr(quota, "COMMAND_FILTER_WORK", cost * 1_000 - 1)
    h = Harness(topics=TOPICS)
    peer = h.peer()
    load(peer, 1_000)
    view = {"c": "sow_and_subscribe", "t": "orders", "filter": text}
    for n, fields in enumerate([{}, {"o": "resume"}, {"o": "resume", "bm": "0"}]):
        ack = processed(peer.send({**view, **fields, "sub_id": n, "cid": n}), n)
        assert ack["reason"].startswith("bad filter: too costly over 1000 records"), (fields, ack)
    assert h.broker.topics["orders"].subscribers == {}
    monkeypatch.setattr(quota, "COMMAND_FILTER_WORK", cost * 1_000)
    assert (
        processed(peer.send({**view, "o": "resume", "sub_id": "r", "cid": "r"}), "r")["status"] == "success"
    )


def test_a_replace_is_charged_for_what_it_re_decides(monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``replace`` of a plain ``subscribe`` learns what the client holds by running the old
    filter over every record, then the new one: 6.5 to 10.4 s a replace over 30,000 records,
    uncharged. Scaled down: a budget that holds one filter over 1,000 records, not two."""
    old, new = "/qty > 1 AND /order > 0", "/qty > 2 AND /order > 0"
    cost = compile_filter(old).cost
    assert compile_filter(new).cost == cost
    monkeypatch.setattr(quota, "COMMAND_FILTER_WORK", 2 * cost * 1_000 - 1)
    h = Harness(topics=TOPICS)
    peer = h.peer()
    load(peer, 1_000)
    for c in ("subscribe", "delta_subscribe"):
        assert (
            processed(peer.send({"c": c, "t": "orders", "sub_id": c, "filter": old, "cid": c}), c)["status"]
            == "success"
        )
    plain = {"c": "subscribe", "t": "orders", "sub_id": "subscribe", "filter": new, "o": "replace", "cid": 1}
    ack = processed(peer.send(plain), 1)
    assert ack["reason"].startswith("bad filter: too costly to replace over 1000 records"), ack
    assert [f.text for f in peer.session.subscriptions["subscribe"].filters] == [old], "it stands as it was"
    # A delta subscription remembers what it sent: only the new filter runs, over what it holds
    # (nothing here, so even a budget of one unit holds it).
    monkeypatch.setattr(quota, "COMMAND_FILTER_WORK", 1)
    delta = {**plain, "c": "delta_subscribe", "sub_id": "delta_subscribe", "cid": 2}
    assert processed(peer.send(delta), 2)["status"] == "success"
    monkeypatch.setattr(quota, "COMMAND_FILTER_WORK", 2 * cost * 1_000)
    assert processed(peer.send({**plain, "cid": 3}), 3)["status"] == "success"


WIDE = [f"MAX(/qty + {n}) AS /f{n}" for n in range(64)]


def aggregated_views(peer: Peer, count: int, first: int = 0) -> list[dict[str, Any]]:
    """``count`` aggregated views of 64 fields each, none shared (each groups by a field of its own)."""
    return [
        processed(
            peer.send(
                {
                    "c": "sow_and_subscribe",
                    "t": "orders",
                    "cid": n,
                    "sub_id": n,
                    "grouping": [f"/g{n}"],
                    "projection": WIDE,
                }
            ),
            n,
        )
        for n in range(first, first + count)
    ]


def test_aggregated_views_count_their_projection_against_the_socket_s_budget() -> None:
    """200 aggregations of 64 fields over 100 records were free to one socket's filter budget: each
    change of the source feeds them all."""
    h = Harness(topics=TOPICS)
    peer = h.peer()
    load(peer, 100)
    acks = aggregated_views(peer, 200)
    accepted = [ack for ack in acks if ack["status"] == "success"]
    refused = [ack for ack in acks if ack["status"] != "success"]
    assert accepted and refused, "some fit the budget, not all"
    assert acks[: len(accepted)] == accepted, "refused from the first that does not fit on"
    assert refused[0]["reason"].startswith("invalid options: filter budget: this aggregated view's"), refused[
        0
    ]
    used = sum(quota.subscription_cost(sub) for sub in peer.session.subscriptions.values())
    assert len(peer.session.subscriptions) == len(accepted) and used <= SOCKET_FILTER_BUDGET
    assert len(h.broker.topics["orders"].derived) == len(accepted), "a refused one is not made"


def test_a_transaction_counts_the_aggregations_its_changes_feed() -> None:
    """Then a transaction of 300 publishes took 14 to 27 s in one step: its work counted the
    subscriptions of the topic, not the aggregations fed by it. Outside a transaction the
    publishes run as usual (a frame of them in slices)."""
    h = Harness(topics=TOPICS)
    load(h.peer(), 100)
    for viewer in range(6):
        assert all(ack["status"] == "success" for ack in aggregated_views(h.peer(), 25, first=viewer * 25))
    publisher = h.peer()
    publishes = [{"c": "publish", "t": "orders", "data": {"order": n, "qty": 1}} for n in range(300)]
    ack = processed(publisher.send({"c": "tx", "cid": "tx", "cmds": publishes}), "tx")
    assert ack["reason"].startswith("bad message: cmds["), ack
    assert "units of work in one step" in ack["reason"], ack
    got = publisher.send(*[{**command, "cid": n} for n, command in enumerate(publishes[:20])])
    assert all(processed(got, n)["status"] == "success" for n in range(20))
