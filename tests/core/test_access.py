"""The pure decisions of the front door: origins, /metrics, /topics (PROTOCOL 6.7)."""

from __future__ import annotations

import pytest

from server.core.access import (
    LogonThrottle,
    MetricsAccess,
    is_loopback,
    metrics_access,
    origin_allowed,
    topic_listing,
)
from server.core.config import UserConfig

from .harness import Harness

ALLOWED = ("https://desk.example.com", "http://localhost:3000")

ORIGINS = [
    # (origin, host header, secure, allowed?)
    (None, "127.0.0.1:8000", False, True),
    ("http://127.0.0.1:8000", "127.0.0.1:8000", False, True),
    ("HTTP://127.0.0.1:8000", "127.0.0.1:8000", False, True),
    ("http://LocalHost:8000", "localhost:8000", False, True),
    ("http://localhost.:8000", "localhost:8000", False, True),
    ("http://h.example", "h.example:80", False, True),
    ("http://h.example:80", "h.example", False, True),
    ("https://h.example:443", "h.example", True, True),
    ("http://[::1]:8000", "[::1]:8000", False, True),
    ("https://127.0.0.1:8000", "127.0.0.1:8000", False, False),  # ws is served to http pages
    ("http://127.0.0.1:8000", "127.0.0.1:8000", True, False),  # wss to https pages
    ("http://127.0.0.1:8001", "127.0.0.1:8000", False, False),
    ("http://evil.example.com", "127.0.0.1:8000", False, False),
    ("http://127.0.0.1.evil.example.com:8000", "127.0.0.1:8000", False, False),
    ("http://evil.example.com", None, False, False),
    ("null", "127.0.0.1:8000", False, False),
    ("", "127.0.0.1:8000", False, False),
    ("http://127.0.0.1:99999", "127.0.0.1:8000", False, False),
    ("http://user@127.0.0.1:8000", "127.0.0.1:8000", False, False),
    ("https://desk.example.com", "127.0.0.1:8000", False, True),
    ("https://DESK.example.com:443", "127.0.0.1:8000", False, True),
    ("https://desk.example.com/", "127.0.0.1:8000", False, True),
    ("http://desk.example.com", "127.0.0.1:8000", False, False),
    ("https://desk.example.com:8443", "127.0.0.1:8000", False, False),
    ("http://localhost:3000", "127.0.0.1:8000", False, True),
    ("http://localhost", "127.0.0.1:8000", False, False),
]


@pytest.mark.parametrize(("origin", "host", "secure", "expected"), ORIGINS)
def test_origins(origin: str | None, host: str | None, secure: bool, expected: bool) -> None:
    assert origin_allowed(origin, host, secure, ALLOWED) is expected


def test_a_listed_origin_that_is_not_a_url_matches_only_itself() -> None:
    assert origin_allowed("null", "h:1", False, ["null"])
    assert not origin_allowed("null", "h:1", False, [])


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
    h.engine.topic("plain")  # a pub/sub topic made on use is not listed
    topics = h.engine.topics
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
