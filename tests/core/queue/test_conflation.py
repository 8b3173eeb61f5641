"""Socket-queue conflation (docs/protocol.md, Conflation): every policy, both modes, every row of
the merge table.

A "stalled" peer is one whose outbox is never drained until the test reads it.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from ..harness import Harness, QuietPort
from .conflation_hub import deliveries, hub, publish, rebuild, topic


def test_conflate_keeps_the_latest_value_of_every_record_and_the_socket_open() -> None:
    h = hub()
    publisher, stalled = h.peer(), h.peer()
    stalled.send({"c": "subscribe", "t": "c", "sub_id": "s"})
    for update in range(30):
        publisher.send(*[publish("c", n, u=update) for n in range(5)])
    assert stalled.session.close_code is None
    got = deliveries(stalled)
    latest = {m["data"]["id"]: m["data"]["u"] for m in got}
    assert latest == dict.fromkeys(range(5), 29)
    assert len(got) <= 20
    assert h.broker.topics["c"].counters["conflated"] > 0


def test_conflate_does_nothing_while_the_queue_has_room() -> None:
    h = hub(max_messages=1000)
    publisher, reader = h.peer(), h.peer()
    reader.send({"c": "subscribe", "t": "c", "sub_id": "s"})
    publisher.send(*[publish("c", 1, u=u) for u in range(10)])
    assert [m["data"]["u"] for m in deliveries(reader)] == list(range(10))


def test_off_closes_the_socket_with_4001() -> None:
    h = hub()
    publisher, stalled = h.peer(), h.peer()
    stalled.send({"c": "subscribe", "t": "o", "sub_id": "s"})
    publisher.send(*[publish("o", 1, u=u) for u in range(25)])
    assert stalled.session.close_code == 4001
    assert h.broker.topics["o"].counters["closed_slow"] == 1
    assert publisher.session.close_code is None


def test_unsubscribe_drops_queued_updates_and_the_subscription_but_keeps_the_socket() -> None:
    h = hub()
    publisher, stalled = h.peer(), h.peer()
    stalled.send(
        {"c": "subscribe", "t": "u", "sub_id": "slow"}, {"c": "subscribe", "t": "c", "sub_id": "other"}
    )
    publisher.send(*[publish("u", 1, u=u) for u in range(25)])
    assert stalled.session.close_code is None
    got = stalled.take()
    assert {"c": "unsubscribed", "sub_id": "slow", "reason": "back_pressure"} in got
    assert "slow" not in stalled.session.subscriptions and "other" in stalled.session.subscriptions
    publisher.send(publish("u", 1, u=99), publish("c", 1, u=99))
    assert [m["t"] for m in deliveries(stalled)] == ["c"]
    counters = h.broker.topics["u"].counters
    assert counters["unsubscribed"] == 1 and counters["dropped"] > 0


def test_always_holds_at_most_one_update_per_record_even_with_room() -> None:
    h = hub(max_messages=1000)
    publisher, reader = h.peer(), h.peer()
    reader.send({"c": "subscribe", "t": "a", "sub_id": "s"})
    publisher.send(*[publish("a", n % 3, u=n) for n in range(9)])
    assert [(m["data"]["id"], m["data"]["u"]) for m in deliveries(reader)] == [(0, 6), (1, 7), (2, 8)]


@pytest.mark.parametrize(("name", "order"), [("a", [1, 2]), ("aa", [2, 1])])
def test_replace_keeps_the_place_append_goes_to_the_end(name: str, order: list[int]) -> None:
    h = hub(max_messages=1000)
    publisher, reader = h.peer(), h.peer()
    reader.send({"c": "subscribe", "t": name, "sub_id": "s"})
    publisher.send(publish(name, 1, u=0), publish(name, 2, u=0), publish(name, 1, u=1))
    assert [m["data"]["id"] for m in deliveries(reader)] == order


def test_conflate_append_mode_on_overflow() -> None:
    h = hub(max_messages=3)
    publisher, stalled = h.peer(), h.peer()
    stalled.send({"c": "subscribe", "t": "ca", "sub_id": "s"})
    publisher.send(publish("ca", 1, u=0), publish("ca", 2, u=0), publish("ca", 1, u=1), publish("ca", 3, u=0))
    assert [(m["data"]["id"], m["data"]["u"]) for m in deliveries(stalled)] == [(2, 0), (1, 1), (3, 0)]


def test_logon_option_turns_conflation_off_for_the_session() -> None:
    h = hub(max_messages=1000)
    publisher, peer = h.peer(), h.peer()
    peer.send({"c": "logon", "o": "conflation=off"}, {"c": "subscribe", "t": "a", "sub_id": "s"})
    publisher.send(*[publish("a", 1, u=u) for u in range(3)])
    assert [m["data"]["u"] for m in deliveries(peer)] == [0, 1, 2]
    refused = h.peer().send({"c": "logon", "cid": 1, "o": "conflation=maybe"})
    assert refused[0]["reason"].startswith("invalid options")


def test_try_write_comes_before_conflation() -> None:
    h = hub(max_messages=5)
    written: list[bytes] = []

    class WritingPort(QuietPort):
        """A socket that takes whatever is queued when the core asks it to write now."""

        def try_write(self) -> None:
            while (frame := reader.session.outbox.take_frame(1 << 20)) is not None:
                written.append(frame)

    publisher, reader = h.peer(), h.peer(port=WritingPort())
    reader.send({"c": "subscribe", "t": "o", "sub_id": "s"})
    publisher.send(*[publish("o", 1, u=u) for u in range(20)])
    assert reader.session.close_code is None, "writing made room: no close on an off topic"
    assert sum(frame.count(b'"c":"p"') for frame in written) + len(deliveries(reader)) == 20


# -- every view ends equal to the server's (issue: conflation across sids groups, OOF flapping) --


@pytest.mark.parametrize("command", ["sow_and_subscribe", "sow_and_delta_subscribe"])
@pytest.mark.parametrize("name", ["a", "aa"])
def test_messages_about_one_record_for_different_sids_groups_keep_their_order(
    command: str, name: str
) -> None:
    h = hub(max_messages=1000)
    publisher, peer = h.peer(), h.peer()
    peer.send(
        {"c": command, "t": name, "sub_id": "A", "filter": "/x > 0", "o": "oof"},
        {"c": command, "t": name, "sub_id": "B", "filter": "/x > 5", "o": "oof"},
    )
    peer.take()
    publisher.send(*[publish(name, 1, x=x) for x in (11, 3, 20, 30)])
    views: dict[str, dict[str, Any]] = {}
    rebuild(deliveries(peer), views)
    assert [view and next(iter(view.values()))["x"] for view in (views["A"], views["B"])] == [30, 30]


def test_an_oof_subscriber_that_flaps_is_conflated_not_closed() -> None:
    h = Harness(topics=[topic("c", "conflate")], server={"queue_max_messages": 50})
    publisher, stalled = h.peer(), h.peer()
    stalled.send({"c": "sow_and_subscribe", "t": "c", "sub_id": "s", "filter": "/in = 1", "o": "oof"})
    stalled.take()
    for n in range(4000):
        publisher.send(publish("c", n % 5, **{"in": n % 2}))
    assert stalled.session.close_code is None
    views: dict[str, dict[str, Any]] = {}
    rebuild(deliveries(stalled), views)
    server = {
        m["k"]: m["data"]
        for m in h.peer().send({"c": "sow", "t": "c", "cid": "q", "filter": "/in = 1"})
        if m["c"] == "sow"
    }
    assert views.get("s", {}) == server


@pytest.mark.parametrize("name", ["s", "a"])
def test_conflated_messages_keep_select_lists_and_no_sowkey(name: str) -> None:
    h = hub(max_messages=1000)
    publisher, peer = h.peer(), h.peer()
    peer.send({"c": "subscribe", "t": name, "sub_id": "s", "o": "select=[-/secret],no_sowkey"})
    publisher.send(*[publish(name, 1, count=n, secret="x") for n in (1, 2, 3)])
    got = deliveries(peer)
    assert len(got) == 1 and "k" not in got[0] and "secret" not in got[0]["data"]


def test_logon_conflation_off_keeps_the_unsubscribe_policy() -> None:
    h = hub(max_messages=5)
    publisher, stalled = h.peer(), h.peer()
    stalled.send({"c": "logon", "o": "conflation=off"}, {"c": "subscribe", "t": "u", "sub_id": "s"})
    publisher.send(*[publish("u", n) for n in range(20)])
    assert stalled.session.close_code is None
    assert {"c": "unsubscribed", "sub_id": "s", "reason": "back_pressure"} in stalled.take()


@pytest.mark.parametrize("name", ["a", "aa"])
def test_a_new_subscription_never_gets_a_message_before_its_own_ack(name: str) -> None:
    """Found by the model-based test: a second subscription's first message was folded into the
    record's queued entry, ahead of that subscription's processed ack."""
    h = hub(max_messages=1000)
    publisher, peer = h.peer(), h.peer()
    peer.send({"c": "subscribe", "t": name, "sub_id": "first"})
    publisher.send(publish(name, 1, u=0), publish(name, 1, u=1))
    peer.session.outbox.push(b'{"c":"marker"}')
    h.engine.receive(peer.session, b'{"c":"subscribe","t":"%s","sub_id":"second","cid":"s2"}' % name.encode())
    publisher.send(publish(name, 1, u=2))
    got = [m for m in peer.take() if m["c"] != "marker"]
    ack = next(i for i, m in enumerate(got) if m["c"] == "ack" and m["cid"] == "s2")
    assert all("second" not in m.get("sids", ()) for m in got[:ack])
    assert any("second" in m.get("sids", ()) for m in got[ack:])
    assert [m["data"]["u"] for m in got if "first" in m.get("sids", ())][-1] == 2


def test_nothing_follows_unsubscribed_for_a_dropped_subscription() -> None:
    """Found by the model-based test: two subscriptions owed one change each; queueing the first
    message dropped both (policy unsubscribe), and the second was queued after its ``unsubscribed``."""
    h = hub()
    publisher, stalled = h.peer(), h.peer()
    stalled.send(
        {"c": "subscribe", "t": "u", "sub_id": "A", "filter": "/x < 5", "o": "oof"},
        {"c": "subscribe", "t": "u", "sub_id": "B", "filter": "/x < 5", "o": "oof,no_sowkey"},
    )
    publisher.send(*[publish("u", n, x=0) for n in range(10)])
    publisher.send(publish("u", 1, x=9))  # both lose record 1 when the queue is full
    got = stalled.take()
    for sid in ("A", "B"):
        told = got.index({"c": "unsubscribed", "sub_id": sid, "reason": "back_pressure"})
        assert all(sid not in m.get("sids", ()) for m in got[told:])


def test_a_drop_after_replace_drops_the_sub_id_as_it_is_now() -> None:
    """Found by the model-based test: the queued messages of a subscription since replaced were
    dropped, ``unsubscribed`` was sent for its sub_id, and the replacement kept streaming."""
    h = hub()
    publisher, stalled = h.peer(), h.peer()
    stalled.send({"c": "subscribe", "t": "u", "sub_id": "s", "filter": "/x >= 0"})
    publisher.send(*[publish("u", n, x=n) for n in range(20)])  # the queue is full
    replace = b'{"c":"subscribe","t":"u","sub_id":"s","filter":"/x >= 1","o":"replace"}'
    h.engine.receive(stalled.session, replace)  # Peer.send would read the queue
    publisher.send(publish("u", 20, x=20))  # the replacement's first message
    assert "s" not in stalled.session.subscriptions
    publisher.send(publish("u", 1, x=99))
    got = stalled.take()
    told = got.index({"c": "unsubscribed", "sub_id": "s", "reason": "back_pressure"})
    assert all("s" not in m.get("sids", ()) for m in got[told:])


@pytest.mark.parametrize("command", ["subscribe", "sow_and_subscribe"])
def test_a_drop_while_the_replace_is_acked_drops_the_replacement_too(command: str) -> None:
    """Found by the model-based test: the replace's own ack found the queue full, so the
    subscription being replaced was dropped before the replacement took its sub_id over; the
    client was told ``unsubscribed`` and the replacement kept streaming to it."""
    h = hub()
    publisher, stalled = h.peer(), h.peer()
    stalled.send({"c": "subscribe", "t": "u", "sub_id": "s", "filter": "/x >= 0"})
    publisher.send(*[publish("u", n, x=n) for n in range(20)])  # the queue is full, nothing dropped
    assert "s" in stalled.session.subscriptions
    replace = {"c": command, "t": "u", "sub_id": "s", "filter": "/x >= 1", "o": "replace", "cid": "r"}
    h.engine.receive(stalled.session, orjson.dumps(replace))  # Peer.send would read the queue
    assert "s" not in stalled.session.subscriptions
    publisher.send(publish("u", 20, x=20), publish("u", 1, x=99))
    got = stalled.take()
    assert {"c": "ack", "a": "processed", "cid": "r", "status": "success"} in got
    told = got.index({"c": "unsubscribed", "sub_id": "s", "reason": "back_pressure"})
    assert all("s" not in m.get("sids", ()) and m.get("query_id") != "s" for m in got[told:])
    assert not h.broker.topics["u"].subscribers


def test_a_drop_while_a_switch_of_aggregation_is_acked_sends_nothing_after_unsubscribed() -> None:
    """Found in review: a replace onto another aggregation queued its OOFs for the groups the
    client held after the drop its own ack caused, before handing the sub_id over."""
    h = hub()
    publisher, stalled = h.peer(), h.peer()
    groups = "oof,grouping=[/desk],projection=[/desk,SUM(/x) AS /x]"
    stalled.send({"c": "sow_and_subscribe", "t": "u", "sub_id": "g", "o": groups})
    for n in range(20):  # a frame each: a group's message each
        publisher.send(publish("u", n, desk=f"d{n % 3}", sym="s", x=n))
    assert "g" in stalled.session.subscriptions and stalled.session.outbox.queued_messages == 20
    switch = {
        "c": "sow_and_subscribe",
        "t": "u",
        "sub_id": "g",
        "cid": "r",
        "o": "replace," + groups.replace("desk", "sym"),
    }
    h.engine.receive(stalled.session, orjson.dumps(switch))
    publisher.send(publish("u", 1, desk="d1", sym="s", x=50))
    got = stalled.take()
    told = got.index({"c": "unsubscribed", "sub_id": "g", "reason": "back_pressure"})
    assert all("g" not in m.get("sids", ()) and m.get("query_id") != "g" for m in got[told:]), got[told:]
    assert "g" not in stalled.session.subscriptions


@pytest.mark.parametrize("max_messages", [1, 2, 3])
def test_a_snapshot_fits_a_queue_of_any_size(max_messages: int) -> None:
    """Found in review: a snapshot (its group_begin and group_end with it) counted more than a
    queue of one or two messages holds, so it never fitted and closed the socket."""
    h = hub(max_messages)
    publisher, peer = h.peer(), h.peer()
    publisher.send(*[publish("o", n, x=n) for n in range(5)])
    got = peer.send({"c": "sow_and_subscribe", "t": "o", "sub_id": "s"})
    assert peer.session.close_code is None
    assert [m["c"] for m in got] == ["group_begin", *["sow"] * 5, "group_end"]
    assert peer.session.outbox.queued_messages == peer.session.outbox.queued_bytes == 0


@pytest.mark.parametrize("name", ["a", "aa"])
def test_a_socket_never_gets_an_older_state_of_a_record_after_a_newer_one(name: str) -> None:
    """Found by the model-based test: a subscription new to a record starts an entry at the end;
    a later change for an older subscription went into the older entry, ahead of it."""
    h = hub(max_messages=1000)
    publisher, peer = h.peer(), h.peer()
    peer.send({"c": "subscribe", "t": name, "sub_id": "all"})
    publisher.send(publish(name, 1, x=0, u=0))
    peer.send({"c": "subscribe", "t": name, "sub_id": "big", "filter": "/x > 3"})
    publisher.send(publish(name, 1, x=4, u=1), publish(name, 1, x=0, u=2))
    got = [m["data"]["u"] for m in deliveries(peer)]
    assert got == sorted(got) and got[-1] == 2 and 1 in got


@pytest.mark.parametrize(("name", "updates"), [("a", 1), ("aa", 1), ("c", 30), ("ca", 30)])
def test_a_change_conflated_in_place_never_passes_a_snapshot_of_the_record(name: str, updates: int) -> None:
    """Found by the model-based test: a queued update of a record was folded in place, ahead of
    a snapshot queued after it, so the socket got the newer state and then the snapshot's older one."""
    h = hub()
    publisher, peer = h.peer(), h.peer()
    peer.send({"c": "subscribe", "t": name, "sub_id": "live"})
    publisher.send(publish(name, 1, u=0))
    h.engine.receive(peer.session, b'{"c":"sow","t":"%s","query_id":"q"}' % name.encode())
    publisher.send(*[publish(name, 1, u=u) for u in range(1, updates + 1)])
    states = [m["data"]["u"] for m in peer.take() if m["c"] in ("p", "sow")]
    assert states == sorted(states) and states[-1] == updates


@pytest.mark.parametrize("name", ["aa", "a"])
def test_nothing_for_a_sub_id_follows_its_unsubscribe_ack(name: str) -> None:
    """Found by the model-based test: in mode append a record's queued entry moved to the end
    whole, carrying the message of a subscription unsubscribed since past its unsubscribe ack."""
    h = hub(max_messages=1000)
    publisher, peer = h.peer(), h.peer()
    peer.send(
        {"c": "subscribe", "t": name, "sub_id": "stays"}, {"c": "subscribe", "t": name, "sub_id": "goes"}
    )
    publisher.send(publish(name, 1, u=0))
    h.engine.receive(peer.session, b'{"c":"unsubscribe","sub_id":"goes","cid":"u"}')
    publisher.send(publish(name, 1, u=1))
    got = peer.take()
    ack = next(i for i, m in enumerate(got) if m["c"] == "ack" and m["cid"] == "u")
    assert all("goes" not in m.get("sids", ()) for m in got[ack:])
    assert [m["data"]["u"] for m in got if "stays" in m.get("sids", ())][-1] == 1


@pytest.mark.parametrize("name", ["a", "aa", "c"])
def test_a_change_after_a_transaction_never_moves_an_earlier_message_behind_it(name: str) -> None:
    """Found by the model-based test: a change after a queued transaction folded into the record's
    message queued before it (an insert) and moved it to the end, so the socket got the
    transaction's delta about the record before the record itself."""
    h = hub(max_messages=1000)
    publisher, peer = h.peer(), h.peer()
    peer.send({"c": "delta_subscribe", "t": name, "sub_id": "d"})
    if name == "c":
        peer.session.outbox.relieve(drop=False)  # keyed, as after a relief
    h.engine.receive(publisher.session, orjson.dumps(publish(name, 1, u=0, v=0)))
    tx = {"c": "tx", "cid": "t", "cmds": [{"c": "delta_publish", "t": name, "data": {"id": 1, "v": 1}}]}
    h.engine.receive(publisher.session, orjson.dumps(tx))
    h.engine.receive(publisher.session, orjson.dumps(publish(name, 1, u=2, v=1)))
    views: dict[str, dict[str, Any]] = {}
    rebuild(deliveries(peer), views)  # a delta about a record it does not hold would fail here
    assert list(views["d"].values()) == [{"id": 1, "u": 2, "v": 1}]


def test_a_subscription_dropped_for_back_pressure_gets_nothing_of_a_queued_transaction() -> None:
    """Found by the model-based test: a relief dropped a subscription's queued insert of a
    record (policy unsubscribe) but kept the transaction queued after it, whose delta about that
    record then reached the client before its ``unsubscribed``."""
    h = hub(max_messages=6)
    publisher, peer = h.peer(), h.peer()
    h.engine.receive(peer.session, orjson.dumps({"c": "delta_subscribe", "t": "u", "sub_id": "d"}))
    h.engine.receive(publisher.session, orjson.dumps(publish("u", 2, x=0, v=0)))
    tx = {"c": "tx", "cid": "t", "cmds": [{"c": "delta_publish", "t": "u", "data": {"id": 2, "v": 1}}]}
    h.engine.receive(publisher.session, orjson.dumps(tx))
    for n in range(3, 8):  # the queue overflows: its unsubscribe-policy messages are dropped
        h.engine.receive(publisher.session, orjson.dumps(publish("u", n, x=0, v=0)))
    got = peer.take()
    assert [m["reason"] for m in got if m["c"] == "unsubscribed"] == ["back_pressure"]
    views: dict[str, dict[str, Any]] = {}
    rebuild([m for m in got if m["c"] in ("p", "oof")], views)  # no delta about a record it lacks
