"""``[server] unconfigured_topics`` (docs/protocol.md, Configuration): "pubsub" (the default) makes a
topic that is not configured a plain pub/sub topic; "refuse" fails every command on one with
``invalid topic``, before entitlements, on every path a command names a topic by."""

from __future__ import annotations

from typing import Any

import pytest

from server.core.errors import ConfigError
from server.core.settings.config import parse_config

from ..harness import Harness, acks

TOPICS = [{"name": "orders", "key": ["/order"]}]

COMMANDS: list[dict[str, Any]] = [
    {"c": "publish", "t": "ordrs", "data": {"order": 1}},
    {"c": "delta_publish", "t": "ordrs", "data": {"order": 1}},
    {"c": "sow_delete", "t": "ordrs", "filter": "/order = 1"},
    {"c": "sow", "t": "ordrs"},
    {"c": "subscribe", "t": "ordrs", "sub_id": "a"},
    {"c": "delta_subscribe", "t": "ordrs", "sub_id": "b"},
    {"c": "sow_and_subscribe", "t": "ordrs", "sub_id": "c"},
    {"c": "sow_and_subscribe", "t": "ordrs", "sub_id": "d", "o": "grouping=[/desk]"},
    {
        "c": "tx",
        "cmds": [
            {"c": "publish", "t": "orders", "data": {"order": 2}},
            {"c": "publish", "t": "ordrs", "data": {"order": 1}},
        ],
    },
]


@pytest.mark.parametrize(
    "command", COMMANDS, ids=lambda command: str(command["c"]) + str(command.get("o", ""))
)
def test_refuse_fails_every_command_on_a_topic_that_is_not_configured(command: dict[str, Any]) -> None:
    h = Harness(topics=TOPICS, server={"unconfigured_topics": "refuse"})
    peer = h.peer()
    got = peer.send({**command, "cid": "x"})
    failed = [m for m in got if m.get("cid") == "x" and m.get("status") == "failure"]
    assert failed and failed[0]["reason"].startswith("invalid topic: "), got
    assert "'ordrs' is not a configured topic" in failed[0]["reason"]
    assert "ordrs" not in h.broker.topics
    assert not h.broker.topics["orders"].records, "a transaction with one refused command applies none"


def test_refuse_leaves_configured_topics_and_the_plain_lane_alone() -> None:
    h = Harness(topics=TOPICS, server={"unconfigured_topics": "refuse"})
    feed, reader = h.peer(), h.peer()
    reader.send({"c": "subscribe", "t": "orders", "sub_id": "s", "cid": "s"})
    feed.send(
        {"c": "publish", "t": "orders", "data": {"order": 1}},
        {"c": "publish", "t": "ordrs", "data": {"order": 2}},
    )
    assert [m["data"]["order"] for m in reader.take() if m["c"] == "p"] == [1]
    assert "ordrs" not in h.broker.topics


def test_pubsub_is_the_default_and_keeps_plain_topics() -> None:
    h = Harness(topics=TOPICS)
    feed, reader = h.peer(), h.peer()
    subscribed = reader.send({"c": "subscribe", "t": "news", "sub_id": "s", "cid": "s"})
    assert acks(subscribed) == [("processed", "success")]
    feed.send({"c": "publish", "t": "news", "data": {"headline": "x"}})
    assert [m["data"] for m in reader.take() if m["c"] == "p"] == [{"headline": "x"}]


def test_any_other_value_is_a_configuration_error() -> None:
    with pytest.raises(
        ConfigError, match=r'server.unconfigured_topics: expected "pubsub" or "refuse", got .refuse all.'
    ):
        parse_config({"server": {"unconfigured_topics": "refuse all"}})
    assert parse_config({"server": {"unconfigured_topics": "refuse"}}).server.unconfigured_topics == "refuse"
