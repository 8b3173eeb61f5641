"""One client can never hurt the others through what it holds: subscriptions (their number and
their filter work), snapshots queued for it, the sizes of its names, ids and options, and
subscription conflation's pending state (docs/protocol.md, Limits)."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from server.core.fanout.subscription import Subscription
from server.core.session import quota

from ..harness import Harness, Peer, acks, of_type, publish

# The limits as docs/protocol.md states them (server/core/limits.py).
MAX_NAME_LENGTH = MAX_ID_LENGTH = 256
MAX_OPTIONS_LENGTH = 4096
MAX_BOOKMARK_LENGTH = 64
MAX_CONFLATION_S = 60
SOCKET_FILTER_BUDGET = 10_000


def alive_subscriptions(session: Any) -> list[Subscription]:
    """The subscriptions of ``session`` that anything still keeps alive, found through the
    collector (the compiled core's classes take no weak references)."""
    gc.collect()
    return [o for o in gc.get_objects() if type(o) is Subscription and o.session is session]


def failure(messages: list[dict[str, Any]]) -> str:
    failed = [m for m in messages if m["c"] == "ack" and m["status"] == "failure"]
    assert len(failed) == 1, messages
    return str(failed[0]["reason"])


def succeeded(messages: list[dict[str, Any]]) -> bool:
    return ("processed", "success") in acks(messages)


# -- max_subscriptions and the filter budget ---------------------------------------------------


def test_max_subscriptions_refuses_one_more_but_not_a_replace() -> None:
    h = Harness(server={"max_subscriptions": 3})
    peer = h.peer()
    for n in range(3):
        assert succeeded(peer.send({"c": "subscribe", "t": "orders", "cid": n}))
    reason = failure(peer.send({"c": "subscribe", "t": "orders", "cid": 3}))
    assert reason.startswith("invalid options: max_subscriptions")
    assert succeeded(
        peer.send({"c": "subscribe", "t": "orders", "cid": 1, "filter": "/a = 1", "o": "replace"})
    )
    assert failure(peer.send({"c": "subscribe", "t": "orders", "cid": 0})).startswith("subid in use")
    assert succeeded(peer.send({"c": "sow", "t": "orders", "cid": "q"})), "a one-off query is no subscription"
    peer.send({"c": "unsubscribe", "sub_id": "2"})
    assert succeeded(peer.send({"c": "subscribe", "t": "orders", "cid": 4}))
    assert len(peer.session.subscriptions) == 3
    assert succeeded(h.peer().send({"c": "subscribe", "t": "orders", "cid": 0})), "per socket"


def test_unindexable_filters_of_one_socket_share_a_budget() -> None:
    h = Harness(server={"max_subscriptions": 5000})  # the budget, not the count, is what stops it
    peer = h.peer()
    # ~5 nodes each: 5,000 of these made 1,000 publishes take 14.5 s.
    refused_at = None
    for n in range(3000):
        got = peer.send({"c": "subscribe", "t": "orders", "cid": n, "filter": f"/id = {n} OR /never = 1"})
        if not succeeded(got):
            refused_at = n
            assert failure(got).startswith("invalid options: filter budget")
            break
    assert refused_at is not None and 0.9 * SOCKET_FILTER_BUDGET / 7 < refused_at <= SOCKET_FILTER_BUDGET / 7
    # Indexed filters are skipped for every record they cannot match: they do not count.
    assert succeeded(peer.send({"c": "subscribe", "t": "orders", "cid": "i", "filter": "/order = 5"}))
    # A replace gives back its old filter's share.
    last = refused_at - 1
    replaced = {"c": "subscribe", "t": "orders", "cid": last, "filter": "/x = 1 OR /y = 2", "o": "replace"}
    assert succeeded(peer.send(replaced))
    # Other sockets have their own budget.
    assert succeeded(h.peer().send({"c": "subscribe", "t": "orders", "cid": 1, "filter": "/a = 1 OR /b = 1"}))


def test_an_index_term_spares_the_records_it_skips_not_the_filter_it_is_anded_with(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``/qty IN (0..99) AND`` forty regular expressions counted nothing (the index term made it
    free), so 1,000 were accepted, and each publish then took 0.3 to 1.7 s: the index lets every
    record through when every record has such a qty. What runs after the term counts."""
    h = Harness(server={"max_subscriptions": 5000})
    peer = h.peer()
    regexes = " AND ".join(f"/s LIKE 'a{n}(b|c)+'" for n in range(40))
    text = f"/qty IN ({', '.join(str(n) for n in range(100))}) AND {regexes}"
    accepted = 0
    for n in range(1000):
        got = peer.send({"c": "subscribe", "t": "orders", "cid": n, "filter": text})
        if not succeeded(got):
            assert failure(got).startswith("invalid options: filter budget"), got
            break
        accepted += 1
    assert 0 < accepted < 5, accepted
    # The term alone (or an equality) is a lookup: past what a budget of 100 would hold of
    # filters costing as much as these unindexed (3 and 2 units a pair).
    monkeypatch.setattr(quota, "SOCKET_FILTER_BUDGET", 100)
    other = h.peer()
    for n in range(40):
        assert succeeded(other.send({"c": "subscribe", "t": "orders", "cid": n, "filter": f"/order = {n}"}))
        assert succeeded(
            other.send({"c": "subscribe", "t": "orders", "cid": f"i{n}", "filter": "/qty IN (1, 2)"})
        )


def test_an_ordinary_dashboard_is_far_within_the_budget() -> None:
    h = Harness()
    peer = h.peer()
    filters = [
        "/qty > 100 AND /side = 'B'",
        "/trader LIKE '(?i)^tom' AND /px BETWEEN 10 AND 500",
        "UPPER(/venue) IN ('XNAS', 'XNYS') OR /notional > 1000000",
        "/status != 'filled' AND (/qty * /px) > 50000",
    ]
    for n in range(50):
        got = peer.send({"c": "sow_and_subscribe", "t": "orders", "cid": n, "filter": filters[n % 4]})
        assert succeeded(got), got


def test_a_single_filter_past_the_budget_is_refused() -> None:
    peer = Harness().peer()
    text = " OR ".join(f"/s LIKE 'a{n}(b|c)+'" for n in range(120))
    assert failure(peer.send({"c": "subscribe", "t": "orders", "cid": 1, "filter": text})).startswith(
        "invalid options: filter budget"
    )


# -- snapshots count against the queue ---------------------------------------------------------


def loaded(records: int = 500, **server: Any) -> tuple[Harness, Peer]:
    h = Harness(server=server)
    publisher = h.peer()
    publisher.send(*[publish(n, pad="p" * 50) for n in range(records)])
    return h, publisher


def test_a_queued_snapshot_counts_its_records_until_they_are_written() -> None:
    h, _ = loaded(500)
    peer = h.peer()
    peer.engine.receive(peer.session, b'{"c":"sow","t":"orders","query_id":"q"}')
    outbox = peer.session.outbox
    assert outbox.queued_messages >= 500 and outbox.queued_bytes >= 500 * 60
    got = peer.take()
    assert len(of_type(got, "sow")) == 500
    assert outbox.queued_messages == 0 and outbox.queued_bytes == 0


def test_snapshots_a_socket_does_not_read_close_it_instead_of_piling_up() -> None:
    # A socket that never read sent 500 sow queries a frame: RSS 42 MB -> 783 MB.
    h, _ = loaded(500, queue_max_messages=5000)
    stalled, bystander = h.peer(), h.peer()
    stalled.engine.receive(stalled.session, b"[" + b",".join([b'{"c":"sow","t":"orders"}'] * 500) + b"]")
    assert stalled.session.close_code == 4001
    assert stalled.session.outbox.queued_messages == 0, "a closed socket's queue is dropped"
    assert succeeded(bystander.send({"c": "sow", "t": "orders", "cid": "q"}))


def test_a_snapshot_bigger_than_the_queue_still_goes_to_a_reading_socket() -> None:
    h, publisher = loaded(500, queue_max_messages=400)
    peer = h.peer()
    got = peer.send({"c": "sow_and_subscribe", "t": "orders", "sub_id": "s"})
    assert peer.session.close_code is None
    publisher.send(publish(1, pad="new"))
    got += peer.take()
    assert len(of_type(got, "sow")) == 500 and of_type(got, "p")[0]["data"]["pad"] == "new"


@pytest.mark.pure
def test_views_of_a_plain_snapshot_are_made_as_it_drains(monkeypatch: pytest.MonkeyPatch) -> None:
    h, _ = loaded(300)
    made: list[Any] = []
    original = Subscription.view_of

    def counting(self: Subscription, version: Any) -> Any:
        made.append(version)
        return original(self, version)

    monkeypatch.setattr(Subscription, "view_of", counting)
    peer = h.peer()
    peer.engine.receive(peer.session, b'{"c":"sow","t":"orders","o":"select=[-/pad]"}')
    assert made == [], "nothing is selected before the writer drains"
    got = of_type(peer.take(), "sow")
    assert len(made) == 300 and all("pad" not in m["data"] for m in got)


# -- names, ids and options --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ({"c": "logon", "client_name": "n" * (MAX_NAME_LENGTH + 1)}, "bad message: client_name too long"),
        ({"c": "logon", "user_id": "u" * (MAX_NAME_LENGTH + 1)}, "bad message: user_id too long"),
        ({"c": "logon", "label": "l" * (MAX_NAME_LENGTH + 1)}, "bad message: label too long"),
        ({"c": "logon", "label": 7}, "bad message: label"),
        ({"c": "logon", "o": "x" * (MAX_OPTIONS_LENGTH + 1)}, "invalid options: o too long"),
        ({"c": "publish", "t": "t" * (MAX_NAME_LENGTH + 1), "data": {}}, "bad message: t too long"),
        (
            {"c": "subscribe", "t": "orders", "sub_id": "s" * (MAX_ID_LENGTH + 1)},
            "bad message: sub_id too long",
        ),
        (
            {"c": "sow", "t": "orders", "query_id": "q" * (MAX_ID_LENGTH + 1)},
            "bad message: query_id too long",
        ),
        ({"c": "subscribe", "t": "orders", "sub_id": 2**63}, "bad message: sub_id too large"),
        (
            {"c": "subscribe", "t": "orders", "sub_id": "s", "bm": "1" * (MAX_BOOKMARK_LENGTH + 1)},
            "bad message: bm",
        ),
        ({"c": "sow", "t": "orders", "o": "oof," * 1100}, "invalid options: o too long"),
        (
            {"c": "sow", "t": "orders", "o": "select=[" + ",".join(["-/a"] * 65) + "]"},
            "invalid options: select",
        ),
        ({"c": "sow", "t": "orders", "o": "select=[-/" + "a" * 300 + "]"}, "invalid options: select"),
        ({"c": "subscribe", "t": "orders", "sub_id": 1, "o": "conflation=2m"}, "invalid options: conflation"),
        ({"c": "unsubscribe", "sub_id": "a," + "b" * 300}, "bad message: sub_id too long"),
        ({"c": "publish", "t": "orders", "data": {"order": 1}, "s": 2**64 - 1}, "bad message: s too large"),
        ({"c": "x" * 1000}, "bad message: c too long"),
    ],
)
def test_names_ids_and_options_are_bounded(command: dict[str, Any], expected: str) -> None:
    assert failure(Harness().peer().send({**command, "cid": "c"})).startswith(expected)


def test_a_huge_cid_is_not_echoed_back() -> None:
    got = Harness().peer().send({"c": "heartbeat", "cid": "c" * 1_000_000})
    assert failure(got).startswith("bad message: cid too long")
    assert "cid" not in got[0] and len(str(got)) < 1000


def test_names_and_ids_at_the_limits_are_accepted() -> None:
    peer = Harness().peer()
    name, sub_id = "n" * MAX_NAME_LENGTH, "s" * MAX_ID_LENGTH
    assert succeeded(peer.send({"c": "logon", "client_name": name, "cid": 1}))
    assert succeeded(peer.send({"c": "subscribe", "t": "orders", "sub_id": sub_id, "cid": 2}))
    conflated = {"c": "subscribe", "t": "orders", "cid": "c", "o": f"conflation={MAX_CONFLATION_S}s"}
    assert succeeded(peer.send(conflated))


# -- subscription conflation releases what it holds --------------------------------------------


def test_an_unsubscribed_conflated_subscription_releases_everything() -> None:
    # conflation=100000h leaked 163 MB over 15 rounds of subscribe, update, unsubscribe.
    h = Harness()
    publisher, peer = h.peer(), h.peer()
    publisher.send(*[publish(n, qty=1) for n in range(50)])
    for round_ in range(15):
        peer.send({"c": "sow_and_delta_subscribe", "t": "orders", "sub_id": "s", "o": "oof,conflation=60s"})
        subscription = peer.session.subscriptions["s"]
        publisher.send(*[publish(n, qty=round_ + 2) for n in range(50)])
        assert subscription.waiting.pending and subscription.held
        peer.send({"c": "unsubscribe", "sub_id": "s"})
        assert not subscription.waiting.pending and not subscription.held
        del subscription
        peer.take()
    assert not alive_subscriptions(peer.session), "nothing keeps an ended subscription alive"
    assert h.broker.timers.interval_entries == 0


def test_a_closed_socket_releases_its_conflated_subscriptions() -> None:
    h = Harness()
    publisher, peer = h.peer(), h.peer()
    peer.send({"c": "subscribe", "t": "orders", "sub_id": "s", "o": "conflation=60s"})
    assert alive_subscriptions(peer.session)
    publisher.send(*[publish(n) for n in range(20)])
    h.broker.close_session(peer.session)
    peer.session.outbox.close()
    assert not alive_subscriptions(peer.session) and h.broker.timers.interval_entries == 0


def test_interval_entries_of_replaced_subscriptions_are_swept() -> None:
    h = Harness()
    publisher, peer = h.peer(), h.peer()
    for round_ in range(200):
        peer.send(
            {"c": "subscribe", "t": "orders", "sub_id": "s", "o": f"replace,conflation={round_ % 50 + 1}s"}
        )
        publisher.send(publish(round_ % 10))
    assert h.broker.timers.interval_entries < 140, "ended subscriptions' entries do not pile up"


def test_distinct_select_lists_stay_within_the_shared_cache() -> None:
    # A 2.7 KB select list parses to ~270 KB; records/select.py's cache kept 1,024 of them (~270 MB).
    from server.core.filters.cache import COMPILED  # noqa: PLC0415 - the module is what is tested

    peer = Harness().peer()
    texts = [
        ",".join(f"-/{chr(97 + k)}{n}/" + "/".join(f"s{i}" for i in range(60)) for k in range(8))
        for n in range(400)
    ]
    for text in texts:
        assert succeeded(peer.send({"c": "sow", "t": "orders", "cid": 1, "o": f"select=[{text}]"}))
    assert COMPILED.total_bytes <= COMPILED.max_bytes
    assert ("select", texts[0]) not in COMPILED and ("select", texts[-1]) in COMPILED
