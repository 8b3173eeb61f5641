"""The pure decisions of the front door: /metrics, /topics (docs/protocol.md, Who may connect;
origins and Host names: test_server_names.py)."""

from __future__ import annotations

import pytest

from server.core.session.access import (
    LogonThrottle,
    MetricsAccess,
    is_loopback,
    metrics_access,
    topic_listing,
)
from server.core.settings.config import UserConfig

from ..harness import Harness


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("127.0.0.1", True),
        ("127.9.9.9", True),
        ("::1", True),
        ("10.0.0.1", False),
        ("x", False),
        (None, False),
    ],
)
def test_loopback(address: str | None, expected: bool) -> None:
    assert is_loopback(address) is expected


@pytest.mark.parametrize(
    ("auth", "token", "given", "address", "expected"),
    [
        (False, None, None, "10.0.0.1", MetricsAccess.ALLOW),
        (True, None, None, "127.0.0.1", MetricsAccess.ALLOW),
        (True, None, None, "10.0.0.1", MetricsAccess.FORBIDDEN),
        (True, None, "anything", "10.0.0.1", MetricsAccess.FORBIDDEN),
        (True, "t0ken", "t0ken", "10.0.0.1", MetricsAccess.ALLOW),
        (True, "t0ken", "t0ken!", "127.0.0.1", MetricsAccess.TOKEN_REQUIRED),
        (True, "t0ken", None, "127.0.0.1", MetricsAccess.TOKEN_REQUIRED),
        (False, "t0ken", None, "127.0.0.1", MetricsAccess.TOKEN_REQUIRED),
        (False, "t0ken", "t0ken", "10.0.0.1", MetricsAccess.ALLOW),
    ],
)
def test_metrics_access(
    auth: bool, token: str | None, given: str | None, address: str | None, expected: MetricsAccess
) -> None:
    assert metrics_access(auth, token, given, address) is expected


def test_topic_listing_shows_what_a_user_may_read_and_no_counts_through_a_filter() -> None:
    h = Harness(
        topics=[{"name": "orders", "key": ["/order"], "durable": True}, {"name": "trades", "key": ["/id"]}]
    )
    h.peer().send({"c": "publish", "t": "orders", "data": {"order": 1}})
    h.broker.topic("plain")  # a pub/sub topic made on use is not listed
    topics = h.broker.topics
    everything = topic_listing(topics, None)
    assert everything == [
        {"name": "orders", "key": ["/order"], "durable": True, "records": 1},
        {"name": "trades", "key": ["/id"], "durable": False, "records": 0},
    ]
    alice = UserConfig("alice", "x", None, ("orders",), (), {"orders": "/customer = 'Alice'"})
    assert topic_listing(topics, alice) == [{"name": "orders", "key": ["/order"], "durable": True}]
    reader = UserConfig("reader", "x", None, ("*",), (), {})
    assert [t.get("records") for t in topic_listing(topics, reader)] == [1, 0]
    nobody = UserConfig("nobody", "x", None, (), (), {})
    assert topic_listing(topics, nobody) == []


def test_a_blocked_address_is_unblocked_after_the_block_and_counts_afresh() -> None:
    throttle = LogonThrottle()
    assert [throttle.failed("a", 0.0) for _ in range(5)] == [False, False, False, False, True]
    assert throttle.blocked("a", 59.9) and not throttle.blocked("b", 1.0)
    assert not throttle.blocked("a", 60.0)
    assert not throttle.failed("a", 60.0), "the failures that led to the block do not count again"
