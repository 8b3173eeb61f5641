"""Transactions under socket-queue conflation (docs/protocol.md, Transactions and Conflation): the
table in the Transactions section of docs/protocol.md, row by row, and the paragraph above it.

A stalled peer never reads until the test does; ``relieve`` is what a full queue (or background
conflation, ``drop=False``) does to it.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from server.core.queue.tx_merge import TxMerge

from ..harness import Harness, Peer
from .conflation_hub import hub, publish, rebuild


def tx(*commands: dict[str, Any]) -> dict[str, Any]:
    return {"c": "tx", "cmds": list(commands)}


def delta(t: str, record_id: int, **fields: Any) -> dict[str, Any]:
    return {"c": "delta_publish", "t": t, "data": {"id": record_id, **fields}}


def stalled(h: Harness, *subscriptions: dict[str, Any]) -> Peer:
    peer = h.peer()
    peer.send(*subscriptions)  # acks and snapshots read: the queue is empty
    return peer


def feed(h: Harness, *commands: dict[str, Any]) -> None:
    """Each command in a frame of its own, from a publisher whose own queue is never read."""
    publisher = h.peer()
    for command in commands:
        h.engine.receive(publisher.session, orjson.dumps(command))


def frames(peer: Peer) -> list[list[dict[str, Any]]]:
    out = []
    while (frame := peer.session.outbox.take_frame(1 << 20)) is not None:
        out.append(orjson.loads(frame))
    return out


def shape(peer: Peer) -> list[Any]:
    """What the socket is sent: each block as a list of (c, id, field u) of its messages, each
    message outside a block as a tuple."""
    out: list[Any] = []
    block: list[Any] | None = None
    for frame in frames(peer):
        for m in frame:
            if m["c"] == "tx_begin":
                block = []
            elif m["c"] == "tx_end":
                out.append(block)
                block = None
            else:
                data = m.get("data") or m.get("delta") or {}
                item = (m["c"], data.get("id"), data.get("u"))
                (block if block is not None else out).append(item)
    assert block is None, "a block split across frames"
    return out


# -- row 1: blocks A then B merge, per record, into one block with B's ID --------------------------


@pytest.mark.parametrize(("name", "order"), [("c", [1, 2]), ("ca", [2, 1])])
def test_consecutive_blocks_merge_per_record_in_the_topics_mode(name: str, order: list[int]) -> None:
    h = hub(max_messages=1000)
    peer = stalled(h, {"c": "subscribe", "t": name, "sub_id": "s"})
    feed(h, tx(publish(name, 1, u=0), publish(name, 2, u=0)), tx(publish(name, 1, u=1)))
    peer.session.outbox.relieve()
    got = frames(peer)
    assert len(got) == 1
    [[begin, *inside, end]] = got
    assert (begin["c"], end["c"]) == ("tx_begin", "tx_end") and begin["tx"] == end["tx"]
    # replace: record 1 keeps its first place; append: it goes to the end.
    assert [(m["data"]["id"], m["data"]["u"]) for m in inside] == [(n, 1 if n == 1 else 0) for n in order]


def test_the_merged_block_carries_the_latest_transactions_id() -> None:
    h = hub(max_messages=1000)
    reader, peer = h.peer(), stalled(h, {"c": "subscribe", "t": "c", "sub_id": "s"})
    reader.send({"c": "subscribe", "t": "c", "sub_id": "r"})
    feed(h, tx(publish("c", 1, u=0)), tx(publish("c", 2, u=0)))
    ids = [m["tx"] for m in reader.take() if m["c"] == "tx_end"]
    peer.session.outbox.relieve()
    [frame] = frames(peer)
    assert frame[0] == {"c": "tx_begin", "tx": ids[-1]} and frame[-1] == {"c": "tx_end", "tx": ids[-1]}


# -- rows 2 to 4: changes between and after blocks join them, changes before stay before -----------


def test_plain_messages_between_two_blocks_join_them() -> None:
    h = hub(max_messages=1000)
    peer = stalled(h, {"c": "subscribe", "t": "c", "sub_id": "s"})
    feed(
        h,
        tx(publish("c", 1, u=0)),
        publish("c", 2, u=0),  # between: joins, or it would be seen before or after a block
        publish("c", 1, u=1),  # and conflates with the block's message about record 1
        tx(publish("c", 3, u=0)),
    )
    peer.session.outbox.relieve()
    assert shape(peer) == [[("p", 1, 1), ("p", 2, 0), ("p", 3, 0)]]


def test_plain_messages_after_the_last_block_join_it() -> None:
    h = hub(max_messages=1000)
    peer = stalled(h, {"c": "subscribe", "t": "c", "sub_id": "s"})
    feed(h, tx(publish("c", 1, u=0)), publish("c", 1, u=1), publish("c", 2, u=0))
    peer.session.outbox.relieve()
    assert shape(peer) == [[("p", 1, 1), ("p", 2, 0)]]


def test_changes_already_conflated_between_blocks_join_them_by_the_topics_merge() -> None:
    """An ``always`` topic conflates at once, so what comes between two blocks is already one
    message (summed by the topic's ``conflation_merge``): it joins the merged block like the
    changes it stands for, and the block sends the sum of all four."""
    h = hub(max_messages=1000)
    peer = stalled(h, {"c": "subscribe", "t": "s", "sub_id": "s"})
    feed(
        h,
        tx(publish("s", 1, count=1)),
        publish("s", 1, count=2),
        publish("s", 1, count=3),
        tx(publish("s", 1, count=4)),
    )
    peer.session.outbox.relieve()
    [[begin, message, end]] = frames(peer)
    assert (begin["c"], message["data"], end["c"]) == ("tx_begin", {"id": 1, "count": 10}, "tx_end")


def test_plain_messages_before_the_first_block_stay_before_it() -> None:
    h = hub(max_messages=1000)
    peer = stalled(h, {"c": "subscribe", "t": "c", "sub_id": "s"})
    feed(h, publish("c", 1, u=0), publish("c", 1, u=1), tx(publish("c", 1, u=2), publish("c", 2, u=0)))
    peer.session.outbox.relieve()
    # Conflated among themselves, but never into the block: a transaction is never seen before
    # a change applied before it, and never folded ahead of its place either.
    assert shape(peer) == [("p", 1, 1), [("p", 1, 2), ("p", 2, 0)]]


# -- row 5: anything else in the queue keeps two blocks apart --------------------------------------


def test_an_ack_between_two_blocks_keeps_them_apart() -> None:
    h = hub(max_messages=1000)
    peer = stalled(h, {"c": "subscribe", "t": "c", "sub_id": "s"})
    feed(h, tx(publish("c", 1, u=0)))
    h.engine.receive(peer.session, b'{"c":"subscribe","t":"c","sub_id":"new","cid":"n"}')
    feed(h, tx(publish("c", 1, u=1)))
    peer.session.outbox.relieve()
    got = [m for frame in frames(peer) for m in frame]
    ack = next(i for i, m in enumerate(got) if m["c"] == "ack")
    assert [m["c"] for m in got[:ack]] == ["tx_begin", "p", "tx_end"]
    assert [(m["c"], m.get("sids")) for m in got[ack + 1 :]] == [
        ("tx_begin", None),
        ("p", ["s", "new"]),
        ("tx_end", None),
    ], "the new subscription's first message comes after its ack, and the block after it whole"


# -- row 1 again: what a record's messages come to in the merged block -----------------------------


def oof_peer(h: Harness) -> Peer:
    return stalled(
        h, {"c": "sow_and_delta_subscribe", "t": "c", "sub_id": "d", "filter": "/v > 0", "o": "oof"}
    )


def test_an_update_in_each_block_is_one_composite_delta() -> None:
    h = hub(max_messages=1000)
    feed(h, publish("c", 1, v=1, w=0, note="n" * 200))
    peer = oof_peer(h)
    feed(h, tx(delta("c", 1, v=2)), tx(delta("c", 1, w=5)))
    peer.session.outbox.relieve()
    [[_, update, _]] = frames(peer)
    assert update["patch"] == [
        {"op": "replace", "path": "/v", "value": 2},
        {"op": "replace", "path": "/w", "value": 5},
    ]


def test_an_oof_in_a_later_block_is_never_silenced() -> None:
    h = hub(max_messages=1000)
    peer = oof_peer(h)
    feed(h, tx(publish("c", 1, v=1)), tx(publish("c", 1, v=0)))  # in, then out
    peer.session.outbox.relieve()
    [[_, oof, _]] = frames(peer)
    assert (oof["c"], oof["reason"]) == ("oof", "match")


def test_a_new_record_is_never_a_delta() -> None:
    h = hub(max_messages=1000)
    peer = oof_peer(h)
    feed(h, tx(publish("c", 1, v=1, w=0)), tx(delta("c", 1, w=1)))  # inserted, then changed
    peer.session.outbox.relieve()
    [[_, message, _]] = frames(peer)
    assert message["data"] == {"id": 1, "v": 1, "w": 1} and "patch" not in message


def test_out_then_in_again_is_the_final_state_in_full() -> None:
    h = hub(max_messages=1000)
    feed(h, publish("c", 1, v=1))
    peer = oof_peer(h)
    feed(h, tx(publish("c", 1, v=0)), tx(publish("c", 1, v=3)))
    peer.session.outbox.relieve()
    [[_, message, _]] = frames(peer)
    assert message["c"] == "p" and message["data"] == {"id": 1, "v": 3}


# -- rows 6 and 7: off and unsubscribe topics inside the blocks ------------------------------------


def test_an_off_topics_messages_all_stay_in_order_in_the_merged_block() -> None:
    h = hub(max_messages=1000)
    peer = stalled(
        h, {"c": "subscribe", "t": "o", "sub_id": "o"}, {"c": "subscribe", "t": "c", "sub_id": "c"}
    )
    feed(
        h,
        tx(publish("o", 1, u=0), publish("c", 1, u=0)),
        tx(publish("o", 1, u=1), publish("c", 1, u=1)),
    )
    peer.session.outbox.relieve()
    [frame] = frames(peer)
    assert (frame[0]["c"], frame[-1]["c"]) == ("tx_begin", "tx_end")
    # The off topic's two messages both stay, in order; the conflated record keeps its place.
    assert [(m["t"], m["data"]["u"]) for m in frame[1:-1]] == [("o", 0), ("c", 1), ("o", 1)]


def test_an_unsubscribe_topics_messages_go_with_its_subscription_the_rest_merges() -> None:
    h = hub(max_messages=1000)
    peer = stalled(
        h, {"c": "subscribe", "t": "u", "sub_id": "u"}, {"c": "subscribe", "t": "c", "sub_id": "c"}
    )
    feed(h, tx(publish("u", 1, u=0), publish("c", 1, u=0)), tx(publish("u", 1, u=1), publish("c", 1, u=1)))
    outbox = peer.session.outbox
    outbox.relieve(drop=False)  # background conflation drops nothing
    assert outbox.queued_messages == 3
    dropped = outbox.relieve()
    assert [sub.sub_id for sub in dropped] == ["u"]
    assert h.broker.topics["u"].counters["dropped"] == 2
    assert shape(peer) == [[("p", 1, 1)]]


def test_a_message_for_two_subscriptions_goes_on_only_to_the_one_not_dropped() -> None:
    """Found by the property test (it predates transactions in conflation): a relief dropped one
    of a message's two subscriptions (the only one with messages queued, in transactions), and
    the message was queued for both, after that one's ``unsubscribed``; had the dropped one come
    first in its sids, the other would have lost it."""
    kept = {"c": "sow_and_subscribe", "t": "u", "sub_id": "kept", "o": "oof", "filter": "/x > 2"}
    goes = {"c": "sow_and_delta_subscribe", "t": "u", "sub_id": "goes", "o": "oof"}
    for subscriptions in ((kept, goes), (goes, kept)):
        h = hub(max_messages=4)
        peer = stalled(h, *subscriptions)
        feed(h, tx(publish("u", 0, x=0)), tx(publish("u", 0, x=0)), publish("u", 1, x=3))
        got = [(m["c"], m.get("sids") or m.get("sub_id")) for frame in frames(peer) for m in frame]
        assert got == [("unsubscribed", "goes"), ("p", ["kept"])]


# -- row 8: a session with conflation=off keeps its blocks as they came ----------------------------


def test_a_session_without_conflation_keeps_its_blocks() -> None:
    h = hub(max_messages=1000)
    peer = stalled(h, {"c": "logon", "o": "conflation=off"}, {"c": "subscribe", "t": "c", "sub_id": "s"})
    feed(h, tx(publish("c", 1, u=0)), tx(publish("c", 1, u=1)))
    peer.session.outbox.relieve()
    assert shape(peer) == [[("p", 1, 0)], [("p", 1, 1)]]


# -- once merged, what comes next joins at once (background conflation too) ------------------------


def test_after_a_relief_new_transactions_and_changes_join_the_merged_block() -> None:
    h = hub(max_messages=1000)
    peer = stalled(h, {"c": "subscribe", "t": "c", "sub_id": "s"})
    feed(h, tx(publish("c", 1, u=0)))
    outbox = peer.session.outbox
    outbox.relieve(drop=False)
    feed(h, *[tx(publish("c", n % 3, u=n)) for n in range(1, 30)], publish("c", 1, u=99))
    assert outbox.queued_messages == 3, "one message per record, however many transactions came"
    assert shape(peer) == [[("p", 1, 99), ("p", 2, 29), ("p", 0, 27)]]


def test_background_conflation_merges_transactions_before_the_queue_fills() -> None:
    h = hub(max_messages=40)
    peer = stalled(h, {"c": "subscribe", "t": "c", "sub_id": "s"})
    feed(h, *[tx(publish("c", 1, u=u), publish("c", 2, u=u)) for u in range(4)])
    outbox = peer.session.outbox
    assert outbox.queued_messages == 16 and peer.session in h.broker.crowded  # past a quarter
    assert not h.broker.conflate_crowded(lambda: False)
    assert outbox.queued_messages == 2 and h.broker.background_conflations == 1
    assert shape(peer) == [[("p", 1, 3), ("p", 2, 3)]]


def test_a_merged_block_of_an_append_topic_lets_go_of_emptied_entries() -> None:
    """In mode append each change of a record moves its message to a new entry at the end; a
    stalled socket's merged block must not keep every emptied one."""
    h = hub(max_messages=20)
    peer = stalled(h, {"c": "subscribe", "t": "ca", "sub_id": "s"})
    outbox = peer.session.outbox
    outbox.relieve(drop=False)
    feed(h, *[tx(publish("ca", u % 2, u=u)) for u in range(3000)])
    [merged] = outbox._entries  # white box: what the queue holds
    assert isinstance(merged, TxMerge) and len(merged.entries) <= 2 * 2 + 16
    assert shape(peer) == [[("p", 0, 2998), ("p", 1, 2999)]]


# -- row 9: what a merged block counts, and the report this fixes ----------------------------------


def test_a_stalled_socket_receiving_transactions_is_conflated_not_closed() -> None:
    """The report: a stream of transactions to a socket that does not read closed it with 4001,
    where the same changes as plain publishes were conflated."""
    for as_transactions in (False, True):
        h = hub(max_messages=10)
        peer = stalled(h, {"c": "sow_and_delta_subscribe", "t": "c", "sub_id": "s", "o": "oof"})
        for u in range(200):
            changes = [publish("c", n, u=u, v=u % 3) for n in range(5)]
            feed(h, tx(*changes)) if as_transactions else feed(h, *changes)
        assert peer.session.close_code is None, as_transactions
        views: dict[str, dict[str, Any]] = {}
        rebuild([m for frame in frames(peer) for m in frame if m["c"] in ("p", "oof")], views)
        assert sorted((r["id"], r["u"]) for r in views["s"].values()) == [(n, 199) for n in range(5)]


def test_a_merged_block_never_counts_more_than_its_parts() -> None:
    h = hub(max_messages=1000)
    peer = stalled(h, {"c": "subscribe", "t": "o", "sub_id": "s"})
    feed(h, *[tx(publish("o", n, u=n)) for n in range(4)])
    outbox = peer.session.outbox
    assert outbox.queued_messages == 4 * 3  # tx_begin, the message, tx_end
    outbox.relieve()
    assert outbox.queued_messages == 4, "an off topic's messages stay; the marks are framing"
    assert shape(peer) == [[("p", n, n) for n in range(4)]]
