"""Transactions (docs/protocol.md, Transactions): checked first, all or nothing, one log entry and
one sequence, delivered to each socket in one frame between tx_begin and tx_end."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from server.core.handlers import recovery

from ..harness import Harness, Peer, entries_of, publish, replay_all

DURABLE = [{"name": "orders", "key": ["/order"], "durable": True}, {"name": "fills", "key": ["/id"]}]


def tx(*commands: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"c": "tx", "cid": "t", "cmds": list(commands), **fields}


def frames(peer: Peer) -> list[list[dict[str, Any]]]:
    out = []
    while (frame := peer.session.outbox.take_frame(1 << 20)) is not None:
        out.append(orjson.loads(frame))
    return out


def test_a_transaction_reaches_each_subscriber_in_one_frame_between_tx_begin_and_tx_end() -> None:
    h = Harness(topics=DURABLE)
    publisher, watcher, other = h.peer(), h.peer(), h.peer()
    publisher.send(publish(1, qty=1), publish(2, qty=2))
    watcher.send(
        {"c": "subscribe", "t": "orders", "sub_id": "all"},
        {"c": "delta_subscribe", "t": "orders", "sub_id": "d", "filter": "/qty < 100"},
        {"c": "subscribe", "t": "fills", "sub_id": "f"},
    )
    other.send({"c": "subscribe", "t": "orders", "sub_id": "x", "filter": "/order = 2"})
    watcher.take(), other.take()
    publisher.send(
        publish(9, qty=9),  # before: outside the block
        tx(
            publish(1, qty=10),
            {"c": "delta_publish", "t": "orders", "data": {"order": 2, "qty": 20}},
            {"c": "sow_delete", "t": "orders", "sow_keys": None, "filter": "/order = 9"},
            {"c": "publish", "t": "fills", "data": {"id": "a", "order": 1}},
        ),
        publish(1, qty=11),  # after: outside the block
    )
    [frame] = frames(watcher)
    kinds = [m["c"] for m in frame]
    begin, end = kinds.index("tx_begin"), kinds.index("tx_end")
    assert frame[begin]["tx"] == frame[end]["tx"]
    inside = frame[begin + 1 : end]
    # In the order of the commands: orders 1 and 2 (to "all" and, first seen, in full to "d"),
    # the delete (nothing: no oof), the fill.
    assert [(m["data"].get("order"), m["sids"]) for m in inside] == [
        (1, ["all"]),
        (1, ["d"]),
        (2, ["all"]),
        (2, ["d"]),
        (1, ["f"]),
    ]
    assert [m["data"]["qty"] for m in frame[:begin] if m["c"] == "p"] == [9, 9]
    assert all(m["c"] == "p" for m in frame[end + 1 :])
    # The other socket got its one message in a block of its own.
    [[begin2, message, end2]] = frames(other)
    assert (begin2["c"], message["data"], end2["c"]) == ("tx_begin", {"order": 2, "qty": 20}, "tx_end")
    assert begin2["tx"] == frame[begin]["tx"]


def test_the_transaction_is_one_log_entry_with_one_sequence() -> None:
    h = Harness(topics=DURABLE)
    publisher = h.peer()
    publisher.send({"c": "logon", "client_name": "feed"})
    entries_of(h)
    got = publisher.send(tx(publish(1, qty=1), publish(2, qty=2), s=7, a="persisted"))
    [entry] = entries_of(h)
    assert entry.op == "t" and entry.seq == 7 and [change[1] for change in entry.data] == ["orders"] * 2
    processed = next(m for m in got if m["c"] == "ack")
    assert (processed["a"], processed["s"]) == ("processed", 7)
    again = publisher.send(tx(publish(1, qty=5), s=7))
    assert again[-1]["reason"] == "duplicate"
    assert h.broker.topics["orders"].records[next(iter(h.broker.topics["orders"].records))].data["qty"] == 1


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ({"c": "publish", "t": "orders", "data": {"qty": 1}}, "bad message: cmds[1]: "),
        ({"c": "sow", "t": "orders"}, "bad message: cmds[1]: a transaction holds publish"),
        ({"c": "sow_delete", "t": "news", "filter": "/a = 1"}, "invalid topic: cmds[1]: "),
        ({"c": "publish", "t": "orders"}, "bad message: cmds[1]: publish needs data"),
        ({"c": "sow_delete", "t": "orders", "filter": "/a = "}, "bad filter: cmds[1]: "),
    ],
)
def test_a_bad_command_refuses_the_whole_transaction(bad: dict[str, Any], reason: str) -> None:
    h = Harness()
    publisher, watcher = h.peer(), h.peer()
    watcher.send({"c": "subscribe", "t": "orders", "sub_id": "s"})
    got = publisher.send(tx(publish(1, qty=1), bad, publish(3, qty=3)))
    assert [m["c"] for m in got] == ["ack"] and got[0]["status"] == "failure"
    assert got[0]["reason"].startswith(reason), got[0]["reason"]
    assert not h.broker.topics["orders"].records and watcher.take() == []


@pytest.mark.parametrize("cmds", [None, [], "x", [1]])
def test_cmds_must_be_a_list_of_commands(cmds: Any) -> None:
    h = Harness()
    [ack] = h.peer().send({"c": "tx", "cid": 1, "cmds": cmds})
    assert ack["status"] == "failure" and ack["reason"].startswith("bad message")


def test_later_commands_see_the_earlier_ones() -> None:
    h = Harness()
    publisher = h.peer()
    publisher.send(
        tx(
            publish(1, qty=1, px=5),
            {"c": "delta_publish", "t": "orders", "data": {"order": 1, "qty": 2}},
            publish(2, qty=3),
            {"c": "sow_delete", "t": "orders", "filter": "/qty = 3"},
        )
    )
    records = {v.data["order"]: v.data for v in h.broker.topics["orders"].records.values()}
    assert records == {1: {"order": 1, "qty": 2, "px": 5}}


def test_a_bookmark_replay_sends_the_transaction_whole() -> None:
    h = Harness(topics=DURABLE)
    publisher, watcher = h.peer(), h.peer()
    publisher.send(publish(1, qty=1))
    publisher.send(
        tx(publish(1, qty=2), publish(2, qty=2), {"c": "publish", "t": "fills", "data": {"id": 1}})
    )
    log = entries_of(h)
    watcher.send({"c": "subscribe", "t": "orders", "sub_id": "r", "bm": "0"})
    replay_all(h, log)
    [frame] = frames(watcher)
    kinds = [m["c"] for m in frame if m["c"] != "ack"]
    assert kinds == ["p", "tx_begin", "p", "p", "tx_end"]


def test_a_restart_rebuilds_a_transaction_from_its_one_entry() -> None:
    h = Harness(topics=DURABLE)
    h.peer().send(
        tx(publish(1, qty=1), publish(2, qty=2), {"c": "sow_delete", "t": "orders", "filter": "/qty=1"})
    )
    log = entries_of(h)
    restarted = Harness(topics=DURABLE)
    recovery.restore(restarted.broker, None, [orjson.loads(entry.encode()) for entry in log])
    assert [v.data for v in restarted.broker.topics["orders"].records.values()] == [{"order": 2, "qty": 2}]


@pytest.mark.parametrize(
    "subscribe",
    [
        {"c": "subscribe", "t": "orders", "sub_id": "s", "o": "conflation=1s"},
        {"c": "sow_and_delta_subscribe", "t": "orders", "sub_id": "s", "o": "oof,conflation=1s"},
    ],
)
def test_a_conflation_interval_never_delivers_part_of_a_transaction(subscribe: dict[str, Any]) -> None:
    h = Harness()
    publisher, watcher = h.peer(), h.peer()
    watcher.send(subscribe)
    watcher.take()
    publisher.send(publish(1, qty=1))  # order 1's interval starts now
    h.clock.now += 0.6
    publisher.send(tx(publish(1, qty=2), publish(2, qty=2), publish(3, qty=2)))  # 2, 3: due later
    h.clock.now += 0.3
    publisher.send(tx(publish(3, qty=3), publish(4, qty=3)))  # shares order 3: one group
    h.clock.now += 0.2
    h.broker.advance(h.clock.now)  # order 1 is due: the whole group goes with it
    [frame] = frames(watcher)
    assert [m["c"] for m in frame] == ["tx_begin", "p", "p", "p", "p", "tx_end"]
    assert sorted(m["k"] for m in frame if m["c"] == "p") == sorted(h.broker.topics["orders"].records)
    h.clock.now += 5
    h.broker.advance(h.clock.now)
    assert frames(watcher) == []


def test_a_hidden_page_gets_a_transaction_whole_when_shown() -> None:
    h = Harness()
    publisher, watcher = h.peer(), h.peer()
    watcher.send({"c": "subscribe", "t": "orders", "sub_id": "s"}, {"c": "visibility", "hidden": True})
    watcher.take()
    publisher.send(tx(publish(1, qty=1), publish(2, qty=2)))
    assert frames(watcher) == []
    watcher.engine.receive(watcher.session, b'{"c":"visibility","hidden":false}')
    [frame] = frames(watcher)
    assert [m["c"] for m in frame] == ["tx_begin", "p", "p", "tx_end"]


class TickingClock:
    """A clock that moves between readings, as a real one does."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        self.now += 1e-6
        return self.now


@pytest.mark.parametrize("when", ["shown", "interval ends", "interval ends, moving clock"])
def test_a_transaction_held_by_several_subscriptions_of_a_socket_is_still_one_block(when: str) -> None:
    h = Harness()
    clock = TickingClock(h.clock.now)
    if when == "interval ends, moving clock":
        h.broker.clock = clock
    publisher, watcher = h.peer(), h.peer()
    watcher.send(
        *[
            {"c": "subscribe", "t": "orders", "sub_id": sid, "filter": f"/qty = {n}"}
            for n, sid in enumerate("abc")
        ],
        {"c": "visibility", "hidden": True},
    )
    watcher.take()
    publisher.send(tx(publish(1, qty=0), publish(2, qty=1), publish(3, qty=2)))
    if when == "shown":
        watcher.engine.receive(watcher.session, b'{"c":"visibility","hidden":false}')
    elif when == "interval ends":
        h.clock.now += 5
        h.broker.advance(h.clock.now)
    else:
        due = h.broker.timers.next_due()
        assert due is not None
        clock.now = due  # the runtime wakes at the earliest end, not at every subscription's
        h.broker.advance(clock())
    [frame] = frames(watcher)
    assert [m["c"] for m in frame] == ["tx_begin", "p", "p", "p", "tx_end"]
    assert sorted(m["sids"][0] for m in frame if m["c"] == "p") == ["a", "b", "c"]


def test_the_unsubscribe_policy_drops_subscriptions_whose_updates_wait_in_a_transaction() -> None:
    """A queued block is never conflated, but its messages for a subscription of an
    ``unsubscribe`` topic are that subscription's queued updates: relief drops them with it
    rather than closing the socket."""
    topics = [{"name": "quotes", "key": ["/id"], "conflation": "unsubscribe"}]
    h = Harness(topics=topics, server={"queue_max_messages": 4})
    publisher, watcher = h.peer(), h.peer()
    watcher.send({"c": "subscribe", "t": "quotes", "sub_id": "q"})
    watcher.take()
    quote = {"c": "publish", "t": "quotes", "data": {"id": 1}}
    publisher.send(tx(quote, quote), tx(quote, quote), quote)  # two blocks (2 each), then one more
    assert watcher.session.close_code is None
    messages = [m for frame in frames(watcher) for m in frame]
    assert [(m["c"], m.get("sub_id"), m.get("reason")) for m in messages] == [
        ("unsubscribed", "q", "back_pressure")
    ]
    assert h.broker.topics["quotes"].counters["dropped"] == 4


def test_a_subscription_dropped_to_make_room_gets_nothing_of_the_transaction() -> None:
    topics = [
        {"name": "quotes", "key": ["/id"], "conflation": "unsubscribe"},
        {"name": "orders", "key": ["/order"]},
    ]
    h = Harness(topics=topics, server={"queue_max_messages": 10})
    publisher, watcher = h.peer(), h.peer()
    watcher.send(
        {"c": "subscribe", "t": "quotes", "sub_id": "q"}, {"c": "subscribe", "t": "orders", "sub_id": "o"}
    )
    watcher.take()
    publisher.send(*[{"c": "publish", "t": "quotes", "data": {"id": n}} for n in range(8)])  # not read
    publisher.send(tx({"c": "publish", "t": "quotes", "data": {"id": 1, "v": 2}}, publish(1, qty=1)))
    messages = [m for frame in frames(watcher) for m in frame]
    dropped_at = next(i for i, m in enumerate(messages) if m["c"] == "unsubscribed")
    assert all("q" not in m.get("sids", []) for m in messages[dropped_at:])
    kinds = [(m["c"], m.get("sids")) for m in messages[dropped_at + 1 :]]
    assert kinds == [("tx_begin", None), ("p", ["o"]), ("tx_end", None)]


def _show(watcher: Peer) -> list[tuple[str, Any, Any, Any]]:
    watcher.engine.receive(watcher.session, b'{"c":"visibility","hidden":false}')
    return [
        (m["c"], m.get("tx"), m.get("sids"), (m.get("data") or {}).get("order"))
        for frame in frames(watcher)
        for m in frame
    ]


def test_a_block_that_several_subscriptions_release_is_in_the_order_of_the_commands() -> None:
    h = Harness()
    publisher, watcher = h.peer(), h.peer()
    watcher.send(
        {"c": "subscribe", "t": "orders", "sub_id": "a", "filter": "/qty > 0"},
        {"c": "subscribe", "t": "orders", "sub_id": "b", "filter": "/qty > 0", "o": "oof"},
        {"c": "visibility", "hidden": True},
    )
    watcher.take()
    publisher.send(tx(publish(1, qty=1), publish(2, qty=2)))
    inside = [(order, sids) for c, _, sids, order in _show(watcher) if c == "p"]
    assert inside == [(1, ["a"]), (1, ["b"]), (2, ["a"]), (2, ["b"])]


def test_a_transaction_held_with_different_others_by_each_subscription_is_still_one_block() -> None:
    h = Harness()
    publisher, watcher = h.peer(), h.peer()
    watcher.send(
        {"c": "subscribe", "t": "orders", "sub_id": "a", "filter": "/qty = 0"},
        {"c": "subscribe", "t": "orders", "sub_id": "b"},
        {"c": "visibility", "hidden": True},
    )
    watcher.take()
    publisher.send(tx(publish(1, qty=0)))  # T1: a and b
    publisher.send(tx(publish(2, qty=5)))  # T2: b only
    got = _show(watcher)
    begins = [m for m in got if m[0] == "tx_begin"]
    assert len(begins) == 1
    assert begins[0][1] == max(m[1] for m in got if m[0] == "tx_end")  # the latest ID
    assert [(sids, order) for c, _, sids, order in got if c == "p"] == [(["a"], 1), (["b"], 1), (["b"], 2)]
