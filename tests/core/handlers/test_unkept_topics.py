"""A command on a topic the server does not keep (docs/protocol.md, Topics the server does not
keep): it still does what plain pub/sub does, and its acks and ``group_end`` say so with the
configured names close to it; a failure that is the topic's fault names the topic, not an option
the user never sent."""

from __future__ import annotations

from typing import Any

import pytest

from ..harness import Harness, of_type

TOPICS = [{"name": "orders", "key": ["/order"]}, {"name": "ledger", "key": ["/id"]}]
NEAR = {"did_you_mean": ["orders"], "configured_topics": ["ledger", "orders"]}


def processed(messages: list[dict[str, Any]], cid: str) -> dict[str, Any]:
    (ack,) = [m for m in messages if m["c"] == "ack" and m.get("cid") == cid and m["a"] == "processed"]
    return ack


def warned(message: dict[str, Any], what: str) -> None:
    assert message["pubsub"] is True and message["t"] == "ordrs"
    assert {k: message[k] for k in NEAR} == NEAR
    assert message["warning"].startswith("unconfigured topic: 'ordrs' is not a configured topic")
    assert what in message["warning"] and message["warning"].endswith(
        "did you mean 'orders'? (configured: ledger, orders)"
    )


@pytest.mark.parametrize(
    "command", ["subscribe", "delta_subscribe", "sow_and_subscribe", "sow_and_delta_subscribe"]
)
def test_a_subscription_succeeds_and_its_acks_say_the_topic_is_plain(command: str) -> None:
    h = Harness(topics=TOPICS)
    reader, feed = h.peer(), h.peer()
    got = reader.send({"c": command, "t": "ordrs", "sub_id": "s", "cid": "s", "o": "oof"})
    ack = processed(got, "s")
    assert ack["status"] == "success"
    warned(ack, "the snapshot is empty")
    if command.startswith("sow_and_"):
        (end,) = of_type(got, "group_end")
        assert end["records"] == 0
        warned(end, "the snapshot is empty")
    feed.send({"c": "publish", "t": "ordrs", "data": {"order": 1}})
    assert [m["data"] for m in of_type(reader.take(), "p")] == [{"order": 1}]  # pub/sub as before


def test_a_snapshot_without_acks_still_says_it_on_group_end() -> None:
    h = Harness(topics=TOPICS)
    got = h.peer().send({"c": "sow_and_subscribe", "t": "ordrs", "sub_id": "s"})
    assert of_type(got, "ack") == []
    warned(of_type(got, "group_end")[0], "the snapshot is empty")


def test_a_publish_passes_through_and_its_processed_and_persisted_acks_say_so() -> None:
    h = Harness(topics=TOPICS)
    feed = h.peer()
    feed.send({"c": "logon", "client_name": "feed"})
    got = feed.send(
        {"c": "publish", "t": "ordrs", "cid": "p", "a": "persisted", "s": 1, "data": {"order": 1}}
    )
    acks = [m for m in got if m["c"] == "ack"]
    assert [a["a"] for a in acks] == ["processed", "persisted"]
    for ack in acks:
        assert ack["status"] == "success"
        warned(ack, "the publish reached only its live subscribers")
    delta = feed.send({"c": "delta_publish", "t": "ordrs", "a": "persisted", "s": 2, "data": {"order": 1}})
    assert [a["a"] for a in of_type(delta, "ack")] == ["persisted"] and delta[0]["s"] == 2
    warned(delta[0], "nothing is stored")


def test_a_transaction_says_its_first_topic_the_server_does_not_keep() -> None:
    h = Harness(topics=TOPICS)
    cmds = [
        {"c": "publish", "t": "orders", "data": {"order": 1}},
        {"c": "publish", "t": "ordrs", "data": {"order": 1}},
        {"c": "publish", "t": "ledgr", "data": {"id": 1}},
    ]
    ack = processed(h.peer().send({"c": "tx", "cid": "t", "cmds": cmds}), "t")
    assert ack["status"] == "success"
    warned(ack, "the transaction's publishes to it reached only its live subscribers")
    assert h.broker.topics["orders"].records  # applied, as before
    kept = processed(h.peer().send({"c": "tx", "cid": "k", "cmds": cmds[:1]}), "k")
    assert kept == {"c": "ack", "a": "processed", "cid": "k", "status": "success"}


def test_kept_topics_acks_without_acks_and_a_server_that_keeps_none_carry_nothing_new() -> None:
    h = Harness(topics=TOPICS)
    peer = h.peer()
    ack = processed(peer.send({"c": "sow_and_subscribe", "t": "orders", "sub_id": "s", "cid": "s"}), "s")
    assert ack == {"c": "ack", "a": "processed", "cid": "s", "status": "success"}
    assert peer.send({"c": "publish", "t": "ordrs", "data": {"order": 1}}) == []  # the plain lane
    plain = Harness(topics=[])
    got = plain.peer().send({"c": "sow_and_subscribe", "t": "ordrs", "sub_id": "s", "cid": "s"})
    assert processed(got, "s") == {"c": "ack", "a": "processed", "cid": "s", "status": "success"}
    assert "warning" not in of_type(got, "group_end")[0]


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ({"c": "sow"}, "invalid topic: 'ordrs' has no SOW: it is not a configured topic; "),
        ({"c": "sow_delete", "filter": "/order = 1"}, "invalid topic: 'ordrs' has no SOW: "),
        (
            {"c": "sow_and_subscribe", "sub_id": "g", "o": "grouping=[/desk]"},
            "invalid topic: 'ordrs' has no SOW: ",
        ),
        ({"c": "subscribe", "sub_id": "b", "bm": "0"}, "invalid topic: 'ordrs' keeps no transaction log"),
        # A viewport: the client added positions and top_n, the user named the topic.
        (
            {"c": "sow_and_subscribe", "sub_id": "v", "o": "oof,positions,count", "top_n": 10, "skip_n": 0},
            "invalid topic: 'ordrs' is not a configured topic, so it is plain pub/sub and keeps no records: "
            "a viewport",
        ),
    ],
    ids=["sow", "sow_delete", "aggregate", "bookmark", "viewport"],
)
def test_a_command_the_topic_cannot_serve_fails_naming_the_topic(
    command: dict[str, Any], reason: str
) -> None:
    h = Harness(topics=TOPICS)
    ack = processed(h.peer().send({**command, "t": "ordrs", "cid": "x"}), "x")
    assert ack["status"] == "failure"
    assert ack["reason"].startswith(reason)
    assert ack["reason"].endswith("did you mean 'orders'? (configured: ledger, orders)")
    assert {k: ack[k] for k in NEAR} == NEAR and "pubsub" not in ack


def test_refuse_says_the_same_did_you_mean() -> None:
    h = Harness(topics=TOPICS, server={"unconfigured_topics": "refuse"})
    ack = processed(h.peer().send({"c": "subscribe", "t": "Orders", "sub_id": "s", "cid": "x"}), "x")
    assert ack["reason"] == (
        "invalid topic: 'Orders' is not a configured topic, and this server refuses others "
        "(unconfigured_topics = \"refuse\"); did you mean 'orders'? (configured: ledger, orders)"
    )
    assert {k: ack[k] for k in NEAR} == NEAR
    tx = {"c": "tx", "cid": "t", "cmds": [{"c": "publish", "t": "ordrs", "data": {"order": 1}}]}
    failed = processed(h.peer().send(tx), "t")
    assert failed["reason"].startswith("invalid topic: cmds[0]: 'ordrs' is not a configured topic")
    assert failed["did_you_mean"] == ["orders"]


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ({"c": "subscribe", "o": "positions"}, "which a subscription without a snapshot does not hold"),
        ({"c": "sow", "o": "positions"}, "which a sow does not hold"),
        ({"c": "sow_and_subscribe", "o": "positions"}, "positions is for a live window: give top_n with it"),
        ({"c": "subscribe", "grouping": ["/desk"]}, "invalid options: grouping is for sow,"),
        ({"c": "subscribe", "projection": ["/desk"]}, "invalid options: projection is for sow,"),
        (
            {"c": "subscribe", "grouping": ["/desk"], "projection": ["/desk"]},
            "grouping and projection are for",
        ),
    ],
)
def test_an_option_refused_on_a_kept_topic_is_named_only_when_it_was_sent(
    command: dict[str, Any], reason: str
) -> None:
    h = Harness(topics=TOPICS)
    ack = processed(h.peer().send({**command, "t": "orders", "sub_id": "s", "cid": "x"}), "x")
    assert ack["status"] == "failure" and reason in ack["reason"], ack
