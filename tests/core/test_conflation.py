"""Socket-queue conflation (PROTOCOL 6.3): every policy, both modes, every row of the merge table.

A "stalled" peer is one whose outbox is never drained until the test reads it.
"""

from __future__ import annotations

from typing import Any

import jsonpatch
import pytest

from server.core.merge import merge_record

from .harness import Harness, Peer


def topic(name: str, policy: str, mode: str = "replace", **extra: Any) -> dict[str, Any]:
    return {"name": name, "key": ["/id"], "conflation": policy, "conflation_mode": mode, **extra}


TOPICS = [
    topic("c", "conflate"),
    topic("a", "always"),
    topic("aa", "always", "append"),
    topic("ca", "conflate", "append"),
    topic("o", "off"),
    topic("u", "unsubscribe"),
    topic("s", "always", conflation_merge="tests.core.merge_functions:sum_count"),
    topic("bad", "always", conflation_merge="tests.core.merge_functions:broken"),
]


def hub(max_messages: int = 20) -> Harness:
    return Harness(topics=TOPICS, server={"queue_max_messages": max_messages})


def publish(t: str, record_id: int, **fields: Any) -> dict[str, Any]:
    return {"c": "publish", "t": t, "data": {"id": record_id, **fields}}


def deliveries(peer: Peer) -> list[dict[str, Any]]:
    return [m for m in peer.take() if m["c"] in ("p", "oof", "sow")]


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
    assert h.engine.topics["c"].counters["conflated"] > 0


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
    assert h.engine.topics["o"].counters["closed_slow"] == 1
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
    counters = h.engine.topics["u"].counters
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


# -- the merge table, row by row, on an `always` topic (eager) with a delta + oof subscriber --


def rich_peer(h: Harness, filter_text: str = "/v > 0", options: str = "oof") -> Peer:
    peer = h.peer()
    peer.send({"c": "sow_and_delta_subscribe", "t": "a", "sub_id": "d", "filter": filter_text, "o": options})
    peer.take()
    return peer


def test_row_insert_then_update_is_an_insert_of_the_newer_state() -> None:
    h = hub(max_messages=1000)
    publisher, peer = h.peer(), rich_peer(h)
    publisher.send(publish("a", 1, v=1, x="a"), publish("a", 1, v=2, x="a"))
    assert [(m["c"], m.get("data")) for m in deliveries(peer)] == [("p", {"id": 1, "v": 2, "x": "a"})]


def test_row_insert_then_oof_is_the_oof_alone() -> None:
    h = hub(max_messages=1000)
    publisher, peer = h.peer(), rich_peer(h)
    publisher.send(publish("a", 1, v=1), publish("a", 1, v=0))
    assert [(m["c"], m.get("reason")) for m in deliveries(peer)] == [("oof", "match")]


def test_row_update_then_update_is_a_composite_patch_or_the_record() -> None:
    h = hub(max_messages=1000)
    publisher = h.peer()
    publisher.send(publish("a", 1, v=1, text="t" * 200, n=0))
    peer = h.peer()
    held = next(
        m for m in peer.send({"c": "sow_and_delta_subscribe", "t": "a", "sub_id": "d"}) if m["c"] == "sow"
    )
    publisher.send(publish("a", 1, v=2, text="t" * 200, n=0), publish("a", 1, v=3, text="t" * 200, n=1))
    [composite] = deliveries(peer)
    assert composite["patch"] == [
        {"op": "replace", "path": "/v", "value": 3},
        {"op": "replace", "path": "/n", "value": 1},
    ]
    assert jsonpatch.apply_patch(held["data"], composite["patch"]) == {
        "id": 1,
        "v": 3,
        "text": "t" * 200,
        "n": 1,
    }
    # When the change is bigger than the record, the record goes instead.
    publisher.send(publish("a", 1, v=4, text="x", n=9), publish("a", 1, q=5))
    [whole] = deliveries(peer)
    assert whole["data"] == {"id": 1, "q": 5}


def test_row_update_then_update_for_merge_deltas() -> None:
    h = hub(max_messages=1000)
    publisher = h.peer()
    publisher.send(publish("a", 1, v=1, w=1, note="n" * 100))
    peer = h.peer()
    held = next(
        m
        for m in peer.send({"c": "sow_and_delta_subscribe", "t": "a", "sub_id": "d", "o": "delta=merge"})
        if m["c"] == "sow"
    )["data"]
    publisher.send(
        {"c": "delta_publish", "t": "a", "data": {"id": 1, "v": 2}},
        {"c": "delta_publish", "t": "a", "data": {"id": 1, "w": 2}},
    )
    [composite] = deliveries(peer)
    assert composite["delta"] == {"id": 1, "v": 2, "w": 2}
    assert merge_record(held, composite["delta"]) == {"id": 1, "v": 2, "w": 2, "note": "n" * 100}


def test_row_update_then_oof_is_the_oof_alone() -> None:
    h = hub(max_messages=1000)
    publisher = h.peer()
    publisher.send(publish("a", 1, v=1))
    peer = rich_peer(h)
    publisher.send(publish("a", 1, v=2), publish("a", 1, v=-1))
    assert [(m["c"], m.get("reason"), m["data"]) for m in deliveries(peer)] == [
        ("oof", "match", {"id": 1, "v": -1})
    ]


def test_row_update_then_delete_is_the_deleted_oof() -> None:
    h = hub(max_messages=1000)
    publisher = h.peer()
    publisher.send(publish("a", 1, v=1))
    peer = rich_peer(h)
    publisher.send(publish("a", 1, v=2), {"c": "sow_delete", "t": "a", "filter": "/id = 1"})
    assert [(m["c"], m.get("reason")) for m in deliveries(peer)] == [("oof", "deleted")]


def test_row_out_then_in_is_the_final_state_in_full() -> None:
    h = hub(max_messages=1000)
    publisher = h.peer()
    publisher.send(publish("a", 1, v=1))
    peer = rich_peer(h)
    publisher.send(publish("a", 1, v=-1), publish("a", 1, v=5), publish("a", 1, v=6))
    assert [(m["c"], m["data"]["v"], "patch" in m) for m in deliveries(peer)] == [("p", 6, False)]


def test_row_delete_then_insert_is_the_new_record_in_full() -> None:
    h = hub(max_messages=1000)
    publisher = h.peer()
    publisher.send(publish("a", 1, v=1))
    peer = rich_peer(h)
    publisher.send({"c": "sow_delete", "t": "a", "filter": "/id = 1"}, publish("a", 1, v=5))
    assert [(m["c"], m["data"]) for m in deliveries(peer)] == [("p", {"id": 1, "v": 5})]


def test_row_in_then_out_then_in_then_out_is_one_oof() -> None:
    h = hub(max_messages=1000)
    publisher = h.peer()
    publisher.send(publish("a", 1, v=1))
    peer = rich_peer(h)
    publisher.send(*[publish("a", 1, v=v) for v in (-1, 2, -2, 3, -3)])
    assert [(m["c"], m["reason"], m["data"]["v"]) for m in deliveries(peer)] == [("oof", "match", -3)]


def test_row_full_then_full_is_the_newer_or_the_structural_merge() -> None:
    h = hub(max_messages=1000)
    publisher, summing, plain = h.peer(), h.peer(), h.peer()
    summing.send({"c": "subscribe", "t": "s", "sub_id": "sum"})
    plain.send({"c": "subscribe", "t": "a", "sub_id": "last"})
    publisher.send(
        *[publish("s", 1, count=n) for n in (1, 2, 3)], *[publish("a", 1, count=n) for n in (1, 2, 3)]
    )
    assert [m["data"]["count"] for m in deliveries(summing)] == [6]
    assert [m["data"]["count"] for m in deliveries(plain)] == [3]


def test_a_failing_structural_merge_keeps_the_newer_record() -> None:
    h = hub(max_messages=1000)
    publisher, peer = h.peer(), h.peer()
    peer.send({"c": "subscribe", "t": "bad", "sub_id": "s"})
    publisher.send(publish("bad", 1, count=1), publish("bad", 1, count=2))
    assert [m["data"]["count"] for m in deliveries(peer)] == [2]


def test_structural_merge_keeps_delta_subscribers_consistent() -> None:
    h = hub(max_messages=1000)
    publisher = h.peer()
    publisher.send(publish("s", 1, count=1))
    peer = h.peer()
    held = [
        m for m in peer.send({"c": "sow_and_delta_subscribe", "t": "s", "sub_id": "d"}) if m["c"] == "sow"
    ]
    state = held[0]["data"]
    publisher.send(publish("s", 1, count=2), publish("s", 1, count=3))
    for message in deliveries(peer):
        state = jsonpatch.apply_patch(state, message["patch"]) if "patch" in message else message["data"]
    assert state == {"id": 1, "count": 5}
    publisher.send(publish("s", 1, count=7))
    for message in deliveries(peer):
        state = jsonpatch.apply_patch(state, message["patch"]) if "patch" in message else message["data"]
    assert state == {"id": 1, "count": 7}, "the next delta applies to what the subscriber holds"


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
    publisher, reader = h.peer(), h.peer()
    reader.send({"c": "subscribe", "t": "o", "sub_id": "s"})
    written: list[bytes] = []

    def write_now() -> None:
        while (frame := reader.session.outbox.take_frame(1 << 20)) is not None:
            written.append(frame)

    reader.session.try_write = write_now
    publisher.send(*[publish("o", 1, u=u) for u in range(20)])
    assert reader.session.close_code is None, "writing made room: no close on an off topic"
    assert sum(frame.count(b'"c":"p"') for frame in written) + len(deliveries(reader)) == 20


# -- every view ends equal to the server's (issue: conflation across sids groups, OOF flapping) --


def rebuild(messages: list[dict[str, Any]], views: dict[str, dict[str, Any]]) -> None:
    """Apply received messages to each subscription's view, as a client does."""
    for m in messages:
        for sid in m.get("sids", ()):
            view = views.setdefault(sid, {})
            if m["c"] == "oof":
                view.pop(m["k"], None)
            elif "data" in m:
                view[m["k"]] = m["data"]
            elif "patch" in m:
                view[m["k"]] = jsonpatch.apply_patch(view[m["k"]], m["patch"])
            else:
                view[m["k"]] = merge_record(view[m["k"]], m["delta"])


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


# -- what a merger and a matcher may decide (Diffusion's conflation, completely) ----------------

OUTCOMES = [
    topic("m", "always", conflation_merge="tests.core.merge_functions:by_kind"),
    topic("k", "always", conflation_match="tests.core.merge_functions:same_kind"),
    topic("kd", "always", conflation_match="tests.core.merge_functions:same_kind"),
    topic("bad", "always", conflation_match="tests.core.merge_functions:bad_matcher"),
]


def outcomes_hub() -> Harness:
    return Harness(topics=OUTCOMES, server={"queue_max_messages": 1000})


@pytest.mark.parametrize(
    ("keep", "expected"),
    [
        ("merged", [("p", {"id": 1, "count": 3, "keep": "merged"})]),
        ("older", [("p", {"id": 1, "count": 1})]),
        ("newer", [("p", {"id": 1, "count": 2, "keep": "newer"})]),
        ("both", [("p", {"id": 1, "count": 1}), ("p", {"id": 1, "count": 2, "keep": "both"})]),
    ],
)
def test_a_merger_decides_merge_older_newer_or_both(keep: str, expected: list[Any]) -> None:
    h = outcomes_hub()
    publisher, peer = h.peer(), h.peer()
    peer.send({"c": "subscribe", "t": "m", "sub_id": "s", "o": "no_sowkey"})
    publisher.send(publish("m", 1, count=1), publish("m", 1, count=2, keep=keep))
    assert [(m["c"], m["data"]) for m in peer.take()] == expected


def test_keep_both_for_a_delta_subscriber_sends_both_changes() -> None:
    h = outcomes_hub()
    publisher, peer = h.peer(), h.peer()
    publisher.send(publish("m", 1, count=0, x=0))
    peer.send({"c": "sow_and_delta_subscribe", "t": "m", "sub_id": "s"})
    publisher.send(publish("m", 1, count=0, x=1), publish("m", 1, count=0, x=2, keep="both"))
    patches = [m["patch"] for m in peer.take() if m["c"] == "p"]
    assert patches == [
        [{"op": "replace", "path": "/x", "value": 1}],
        [{"op": "replace", "path": "/x", "value": 2}, {"op": "add", "path": "/keep", "value": "both"}],
    ]


def test_a_matcher_keeps_one_message_per_kind() -> None:
    h = outcomes_hub()
    publisher, peer = h.peer(), h.peer()
    peer.send({"c": "subscribe", "t": "k", "sub_id": "s"})
    publisher.send(
        publish("k", 1, kind="trade", n=1),
        publish("k", 1, kind="quote", n=2),
        publish("k", 1, kind="trade", n=3),
        publish("k", 1, kind="quote", n=4),
    )
    # The trade conflated with the newer trade: taken out, and the conflation goes after the
    # quote, so the record never goes back in time and the last message is the newest state.
    assert [(m["data"]["kind"], m["data"]["n"]) for m in deliveries(peer)] == [("trade", 3), ("quote", 4)]


def test_a_matcher_with_deltas_rebases_the_message_after_the_one_it_took_out() -> None:
    h = outcomes_hub()
    publisher, peer = h.peer(), h.peer()
    publisher.send(publish("kd", 1, kind="trade", n=0))
    peer.send({"c": "sow_and_delta_subscribe", "t": "kd", "sub_id": "s"})
    held: dict[str, Any] = {}
    for m in peer.take():
        if m["c"] == "sow":
            held = m["data"]
    publisher.send(
        publish("kd", 1, kind="quote", n=1),
        publish("kd", 1, kind="trade", n=2),
        publish("kd", 1, kind="quote", n=3),
        publish("kd", 1, kind="trade", n=4),
    )
    for m in deliveries(peer):
        held = jsonpatch.apply_patch(held, m["patch"]) if "patch" in m else m["data"]
    assert held == {"id": 1, "kind": "trade", "n": 4}


def test_a_matcher_that_answers_nonsense_conflates_with_the_newest_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    h = outcomes_hub()
    publisher, peer = h.peer(), h.peer()
    peer.send({"c": "subscribe", "t": "bad", "sub_id": "s"})
    publisher.send(publish("bad", 1, n=1), publish("bad", 1, n=2))
    assert [m["data"]["n"] for m in deliveries(peer)] == [2]
    assert "conflation_match of topic bad returned 99" in caplog.text


# -- background conflation --------------------------------------------------------------------


def test_background_conflation_conflates_a_crowded_queue_early_and_drops_nothing() -> None:
    h = hub(max_messages=100)
    publisher, stalled, fast = h.peer(), h.peer(), h.peer()
    stalled.send({"c": "subscribe", "t": "c", "sub_id": "c"}, {"c": "subscribe", "t": "u", "sub_id": "u"})
    fast.send({"c": "subscribe", "t": "c", "sub_id": "c"})
    publisher.send(*[publish("c", n % 3, u=n) for n in range(20)], publish("u", 1, u=0))
    assert not h.engine.crowded  # a fifth of the queue: nothing to do
    fast.take()
    publisher.send(*[publish("c", n % 3, u=n) for n in range(20, 30)])
    fast.take()
    assert list(h.engine.crowded) == [stalled.session]  # past a quarter; the fast one is not
    assert h.engine.conflate_crowded(lambda: False) is False
    assert stalled.session.outbox.queued_messages == 4  # three records and the unsubscribe topic's
    assert h.engine.background_conflations == 1
    publisher.send(*[publish("c", n % 3, u=n) for n in range(30, 300)])
    got = stalled.take()
    assert {m["data"]["id"]: m["data"]["u"] for m in got if m["t"] == "c"} == {0: 297, 1: 298, 2: 299}
    assert [m["sids"] for m in got if m["t"] == "u"] == [["u"]]  # not dropped: the queue never filled


def test_background_conflation_can_be_turned_off_and_skips_sessions_without_conflation() -> None:
    off = Harness(topics=TOPICS, server={"queue_max_messages": 100, "background_conflation": False})
    publisher, stalled = off.peer(), off.peer()
    stalled.send({"c": "subscribe", "t": "c", "sub_id": "c"})
    publisher.send(*[publish("c", n % 3, u=n) for n in range(50)])
    assert not off.engine.crowded
    h = hub(max_messages=100)
    publisher, stalled = h.peer(), h.peer()
    stalled.send({"c": "logon", "o": "conflation=off"}, {"c": "subscribe", "t": "c", "sub_id": "c"})
    publisher.send(*[publish("c", n % 3, u=n) for n in range(50)])
    assert not h.engine.crowded


@pytest.mark.parametrize("first", ["older", "merged"])
def test_a_message_kept_beside_a_merged_or_older_one_is_relative_to_what_that_one_sends(first: str) -> None:
    """A delta subscriber's second queued message (keep both) is computed by the fan-out against
    the newest state it delivered; when the first queued message was turned into the older state
    or a merge, the second must start from what the first sends, or the client's view ends wrong."""
    h = outcomes_hub()
    publisher, peer = h.peer(), h.peer()
    publisher.send(publish("m", 1, count=0, x=0))
    held: dict[str, Any] = {}
    for m in peer.send({"c": "sow_and_delta_subscribe", "t": "m", "sub_id": "s"}):
        if m["c"] == "sow":
            held = m["data"]
    publisher.send(
        publish("m", 1, count=1, x=1),
        publish("m", 1, count=2, x=2, **({"keep": "older"} if first == "older" else {})),
        publish("m", 1, count=3, x=3, keep="both"),
    )
    for m in deliveries(peer):
        held = jsonpatch.apply_patch(held, m["patch"]) if "patch" in m else m["data"]
    assert held == {"id": 1, "count": 3, "x": 3, "keep": "both"}


def test_keep_older_never_sends_an_older_state_after_a_newer_one() -> None:
    """Found in review: a message kept at its older state moved into the record's newest entry,
    behind the newer state queued there for another subscription of the same socket."""
    h = outcomes_hub()
    publisher, peer = h.peer(), h.peer()
    peer.send({"c": "subscribe", "t": "m", "sub_id": "t", "filter": "/n >= 2"})
    peer.send({"c": "subscribe", "t": "m", "sub_id": "s", "o": "oof"})
    publisher.send(publish("m", 1, n=1, count=0))
    publisher.send(publish("m", 2, n=0))  # record 1's entry is no longer the last one
    publisher.send(publish("m", 1, n=2, count=0, keep="older"))
    states = [m["data"]["n"] for m in peer.take() if m["c"] == "p" and m["data"]["id"] == 1]
    assert states == sorted(states) == [1, 2]
