"""A record the server could not write back is refused before anything is applied (issue 11,
item 9): orjson reads 1,024 levels of nesting but writes only 254."""

from __future__ import annotations

from typing import Any

import pytest

from ..harness import Harness, Peer, entries_of

MAX_RECORD_DEPTH = 200  # docs/protocol.md, Limits (server/core/records/version.py)

TOPICS: list[dict[str, Any]] = [
    {"name": "orders", "key": ["/order"]},
    {"name": "durable", "key": ["/order"], "durable": True},
]


def nested(levels: int) -> str:
    """JSON text of an object ``levels`` deep (``{"n":{"n":...{"n":1}...}}``), written by hand:
    orjson cannot write what is deeper than 254."""
    return '{"n":' * (levels - 1) + '{"n":1' + "}" * levels


def publish(topic: str, order: int, levels: int, command: str = "publish", cid: int = 1) -> str:
    return f'{{"c":"{command}","t":"{topic}","cid":{cid},"data":{{"order":{order},"deep":{nested(levels)}}}}}'


def send_raw(peer: Peer, frame: str) -> list[dict[str, Any]]:
    peer.engine.receive(peer.session, frame)
    return peer.take()


def reasons(messages: list[dict[str, Any]]) -> list[str]:
    return [m["reason"] for m in messages if m["c"] == "ack" and m["status"] == "failure"]


@pytest.mark.parametrize("levels", [MAX_RECORD_DEPTH, 260, 300, 1000])
@pytest.mark.parametrize("topic", ["orders", "durable"])
def test_a_record_too_deep_to_write_is_refused_and_changes_nothing(topic: str, levels: int) -> None:
    h = Harness(TOPICS)
    publisher, watcher = h.peer(), h.peer()
    watcher.send({"c": "sow_and_subscribe", "t": topic, "sub_id": "w", "o": "oof"})
    entries_of(h)
    assert reasons(send_raw(publisher, publish(topic, 1, levels))) == [
        f"bad message: data nested more than {MAX_RECORD_DEPTH} levels deep"
    ]
    assert h.broker.topics[topic].records == {} and entries_of(h) == []
    assert watcher.take() == []
    # The topic still answers: nothing was stored that a snapshot would have to write.
    assert [m["c"] for m in publisher.send({"c": "sow", "t": topic, "cid": 2})] == [
        "ack",
        "group_begin",
        "group_end",
    ]


def test_a_record_at_the_limit_is_stored_logged_and_delivered_in_every_form() -> None:
    h = Harness(TOPICS)
    publisher, full, deltas = h.peer(), h.peer(), h.peer()
    full.send({"c": "subscribe", "t": "durable", "sub_id": "f"})
    deltas.send({"c": "delta_subscribe", "t": "durable", "sub_id": "d"})
    # The record is one level for itself and ``MAX_RECORD_DEPTH - 1`` for the deep field.
    for value in (1, 2):
        frame = publish("durable", 1, MAX_RECORD_DEPTH - 1).replace('{"n":1}', f'{{"n":{value}}}')
        assert reasons(send_raw(publisher, frame)) == []
    assert [m["c"] for m in full.take()] == ["p", "p"]
    assert [("data" in m, "patch" in m) for m in deltas.take()] == [(True, False), (False, True)]
    assert len(entries_of(h)) == 2
    assert [m["c"] for m in publisher.send({"c": "sow", "t": "durable", "cid": 2})][2] == "sow"


def test_a_delta_publish_is_checked_as_the_record_it_would_store() -> None:
    h = Harness(TOPICS)
    publisher = h.peer()
    publisher.send({"c": "publish", "t": "orders", "data": {"order": 1, "qty": 5}})
    frame = publish("orders", 1, 300, command="delta_publish")
    assert reasons(send_raw(publisher, frame))[0].startswith("bad message: data nested more than")
    [version] = h.broker.topics["orders"].records.values()
    assert version.data == {"order": 1, "qty": 5}


@pytest.mark.parametrize("listening", [False, True])
def test_a_plain_topic_refuses_it_whether_or_not_anyone_listens(listening: bool) -> None:
    h = Harness(TOPICS)
    publisher, watcher = h.peer(), h.peer()
    if listening:
        watcher.send({"c": "subscribe", "t": "chatter", "sub_id": "w"})
    assert reasons(send_raw(publisher, publish("chatter", 1, 300)))[0].startswith("bad message")
    assert watcher.take() == []


def test_one_refused_publish_does_not_stop_the_rest_of_its_frame() -> None:
    h = Harness(TOPICS)
    publisher = h.peer()
    frame = f"[{publish('orders', 1, 300, cid=1)},{publish('orders', 2, 3, cid=2)}]"
    acks = [(m["cid"], m["status"]) for m in send_raw(publisher, frame)]
    assert acks == [(1, "failure"), (2, "success")]
    assert [v.data["order"] for v in h.broker.topics["orders"].records.values()] == [2]
