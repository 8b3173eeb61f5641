"""Logon, passwords, read/write entitlements and entitlement filters."""

from __future__ import annotations

import hashlib

import pytest

from ..harness import Harness, of_type

AUTH = {
    "user": [
        {
            "user_id": "alice",
            "password": "secret",
            "read": ["orders"],
            "write": ["orders"],
            "filter": {"orders": "/customer = 'Alice'"},
        },
        {
            "user_id": "bob",
            "password_sha256": hashlib.sha256(b"hunter2").hexdigest(),
            "read": ["*"],
            "write": [],
        },
        {"user_id": "feed", "password": "feed", "read": ["*"], "write": ["*"]},
    ]
}


@pytest.fixture
def hub() -> Harness:
    return Harness(auth=AUTH)


def test_commands_before_logon_are_refused(hub: Harness) -> None:
    out = hub.peer().send({"c": "sow", "t": "orders", "cid": 1})
    assert out[0]["reason"].startswith("logon required")


@pytest.mark.parametrize(
    "credentials", [{"user_id": "alice", "pw": "wrong"}, {"user_id": "eve", "pw": "x"}, {}]
)
def test_bad_credentials_fail_and_close_1008(hub: Harness, credentials: dict[str, str]) -> None:
    peer = hub.peer()
    out = peer.send({"c": "logon", "cid": "l", **credentials})
    assert out[0]["status"] == "failure" and out[0]["reason"].startswith("auth failure")
    assert peer.session.close_code == 1008


def test_sha256_passwords(hub: Harness) -> None:
    out = hub.peer().send({"c": "logon", "cid": "l", "user_id": "bob", "pw": "hunter2"})
    assert out[0]["status"] == "success"


def test_read_and_write_entitlements(hub: Harness) -> None:
    bob = hub.peer()
    bob.send({"c": "logon", "user_id": "bob", "pw": "hunter2"})
    refused = bob.send({"c": "publish", "t": "orders", "cid": 1, "data": {"order": 1}})
    assert refused[0]["reason"].startswith("not entitled")
    alice = hub.peer()
    alice.send({"c": "logon", "user_id": "alice", "pw": "secret"})
    assert alice.send({"c": "subscribe", "t": "trades", "cid": 2})[0]["reason"].startswith("not entitled")
    assert alice.send({"c": "sow_delete", "t": "trades", "cid": 3, "filter": "1=1"})[0]["reason"].startswith(
        "not entitled"
    )


def test_entitlement_filters_limit_what_a_user_sees(hub: Harness) -> None:
    alice, feed = hub.peer(), hub.peer()
    alice.send({"c": "logon", "user_id": "alice", "pw": "secret"})
    feed.send({"c": "logon", "user_id": "feed", "pw": "feed"})
    feed.send(
        {"c": "publish", "t": "orders", "data": {"order": 1, "customer": "Alice"}},
        {"c": "publish", "t": "orders", "data": {"order": 2, "customer": "Bob"}},
    )
    snapshot = of_type(alice.send({"c": "sow_and_subscribe", "t": "orders", "cid": "s"}), "sow")
    assert [m["data"]["order"] for m in snapshot] == [1]
    feed.send(
        {"c": "publish", "t": "orders", "data": {"order": 3, "customer": "Bob"}},
        {"c": "publish", "t": "orders", "data": {"order": 4, "customer": "Alice"}},
    )
    live = alice.take()
    assert [m["data"]["order"] for m in live if m["c"] == "p"] == [4]
    bob = hub.peer()
    bob.send({"c": "logon", "user_id": "bob", "pw": "hunter2"})
    assert len(of_type(bob.send({"c": "sow", "t": "orders", "cid": "b"}), "sow")) == 4
