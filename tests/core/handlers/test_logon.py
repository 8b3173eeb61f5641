"""Identity at logon (docs/protocol.md, Who may connect): client names belong to users, failed
logons are throttled per remote address, passwords are compared in constant time."""

from __future__ import annotations

import hashlib
import hmac
import logging
from typing import Any

import orjson
import pytest

from server.core.handlers import recovery
from server.core.session.access import LogonThrottle
from server.core.settings.config import UserConfig
from server.core.sow.txlog import frame

from ..harness import Harness, Peer, entries_of, replay_all

USERS = {
    "user": [
        {"user_id": "alice", "password": "secret", "read": ["*"], "write": ["*"]},
        {"user_id": "bob", "password": "hunter2", "read": ["*"], "write": ["*"]},
    ]
}
DURABLE = [{"name": "orders", "key": ["/order"], "durable": True}]
PLAIN = [{"name": "orders", "key": ["/order"]}]


def logon(peer: Peer, user: str, name: str | None = "feed", **extra: Any) -> dict[str, Any]:
    password = {"alice": "secret", "bob": "hunter2"}.get(user, "wrong")
    command: dict[str, Any] = {"c": "logon", "cid": "l", "user_id": user, "pw": password, **extra}
    if name is not None:
        command["client_name"] = name
    replies = [m for m in peer.send(command) if m.get("cid") == "l"]
    assert len(replies) == 1, replies
    return replies[0]


def publish(seq: int) -> dict[str, Any]:
    return {"c": "publish", "t": "orders", "s": seq, "data": {"order": seq}}


def sync(h: Harness) -> list[Any]:
    """Write what the engine logged (as the runtime does) and return the entries, as payloads."""
    entries = entries_of(h)
    if entries:
        h.broker.made_durable(entries[-1].lsn)
    return [orjson.loads(e.encode()) for e in entries]


def restarted(entries: list[Any], snapshot: recovery.Snapshot | None = None) -> Harness:
    fresh = Harness(topics=DURABLE, auth=USERS)
    recovery.restore(fresh.broker, snapshot, entries)
    return fresh


# -- client names belong to users ----------------------------------------------------------


@pytest.mark.parametrize("owner_connected", [True, False])
def test_another_user_is_refused_a_client_name_and_closed_1008(owner_connected: bool) -> None:
    h = Harness(topics=PLAIN, auth=USERS)
    alice = h.peer()
    assert logon(alice, "alice")["status"] == "success"
    alice.send(publish(7))
    if not owner_connected:
        h.broker.close_session(alice.session)
    bob = h.peer()
    refused = logon(bob, "bob")
    assert refused["status"] == "failure" and refused["reason"].startswith("name in use")
    assert "s" not in refused, "the owner's sequence must not reach another user"
    assert bob.session.close_code == 1008
    assert not bob.session.logged_on
    # The owner keeps the name and its sequence.
    again = h.peer()
    assert logon(again, "alice")["s"] == 7


def test_the_same_user_replaces_its_older_socket_with_4002() -> None:
    h = Harness(topics=PLAIN, auth=USERS)
    first, second = h.peer(), h.peer()
    logon(first, "alice")
    first.send(publish(3))
    ack = logon(second, "alice")
    assert ack["status"] == "success" and ack["s"] == 3
    assert first.session.close_code == 4002
    assert second.session.close_code is None


def test_other_names_and_logons_without_a_name_are_not_affected() -> None:
    h = Harness(topics=PLAIN, auth=USERS)
    logon(h.peer(), "alice", "alice-feed")
    assert logon(h.peer(), "bob", "bob-feed")["status"] == "success"
    assert logon(h.peer(), "bob", None)["status"] == "success"


def test_without_auth_a_name_is_only_guarded_while_its_holder_is_connected() -> None:
    h = Harness(topics=PLAIN)
    first = h.peer()
    logon(first, "x")
    refused_peer = h.peer()
    refused = logon(refused_peer, "y")
    assert refused["reason"].startswith("name in use") and refused_peer.session.close_code == 1008
    h.broker.close_session(first.session)
    assert logon(h.peer(), "y")["status"] == "success", "user ids are taken on trust without [auth]"


def test_ownership_is_logged_with_the_sequences_and_survives_a_restart() -> None:
    h = Harness(topics=DURABLE, auth=USERS)
    alice = h.peer()
    logon(alice, "alice")
    alice.send(publish(1), publish(2))
    entries = sync(h)
    fresh = restarted(entries)
    assert logon(fresh.peer(), "bob")["reason"].startswith("name in use")
    assert logon(fresh.peer(), "alice")["s"] == 2
    assert sync(fresh) == [], "a name already owned is not logged again"


def test_ownership_survives_a_restart_from_a_snapshot() -> None:
    h = Harness(topics=DURABLE, auth=USERS)
    logon(h.peer(), "alice")
    sync(h)
    encoded = b"".join(recovery.encode_snapshot(recovery.capture(h.broker)))
    snapshot = recovery.decode_snapshot(encoded)
    assert snapshot is not None and snapshot.owners == {"feed": "alice"}
    fresh = restarted([], snapshot)
    assert logon(fresh.peer(), "bob")["reason"].startswith("name in use")


def test_snapshots_and_logs_written_before_owners_existed_are_still_read() -> None:
    old = b"".join(
        [
            frame(["snapshot", 1, 5, {"feed": 4}]),
            frame([["orders", "k", {"order": 1}, 5, 0.0, None]]),
            frame(["end", 1]),
        ]
    )
    snapshot = recovery.decode_snapshot(old)
    assert snapshot is not None and snapshot.sequences == {"feed": 4} and snapshot.owners == {}
    fresh = restarted([[6, "p", "orders", "k2", {"order": 2}, "feed", 5, 0.0, None]], snapshot)
    assert len(fresh.broker.topics["orders"].records) == 2
    assert logon(fresh.peer(), "bob")["s"] == 5, "an unowned name goes to the first user after the upgrade"
    assert logon(fresh.peer(), "alice")["reason"].startswith("name in use")


def test_without_durable_topics_ownership_is_kept_in_memory_only() -> None:
    h = Harness(topics=PLAIN, auth=USERS)
    logon(h.peer(), "alice")
    assert h.broker.durability.take() is None, "nothing to log when no topic is durable"
    assert logon(h.peer(), "bob")["reason"].startswith("name in use")


def test_a_name_whose_owner_left_the_configuration_is_free_again() -> None:
    h = Harness(topics=DURABLE, auth=USERS)
    logon(h.peer(), "alice")
    entries = sync(h)
    only_bob = {"user": [USERS["user"][1]]}
    fresh = Harness(topics=DURABLE, auth=only_bob)
    recovery.restore(fresh.broker, None, entries)
    assert logon(fresh.peer(), "bob")["status"] == "success"
    restarted_again = restarted(entries + sync(fresh))
    assert logon(restarted_again.peer(), "alice")["reason"].startswith("name in use"), "bob owns it now"


# -- throttling ----------------------------------------------------------------------------


def attempt(h: Harness, address: str | None, user: str = "alice", password: str = "wrong") -> Peer:
    peer = h.peer(address)
    peer.send({"c": "logon", "cid": "l", "user_id": user, "pw": password})
    return peer


def test_five_failures_from_an_address_block_it_for_a_minute(caplog: pytest.LogCaptureFixture) -> None:
    h = Harness(topics=PLAIN, auth=USERS)
    for _ in range(5):
        assert attempt(h, "10.0.0.9").session.close_code == 1008
    caplog.clear()
    with caplog.at_level(logging.DEBUG):
        blocked = h.peer("10.0.0.9")
        out = blocked.send({"c": "logon", "cid": "l", "user_id": "alice", "pw": "secret"})
        assert out[0]["status"] == "failure" and out[0]["reason"] == "auth failure: too many attempts"
        assert blocked.session.close_code == 1008 and not blocked.session.logged_on
        for _ in range(20):
            attempt(h, "10.0.0.9", password="secret")
    noisy = [r for r in caplog.records if r.levelno >= logging.INFO and "10.0.0.9" in r.getMessage()]
    assert noisy == [], "the block is logged when it begins, not for every refused attempt"
    other = h.peer("10.0.0.10")
    assert logon(other, "alice")["status"] == "success", "other addresses are not affected"
    h.clock.now += 59
    assert attempt(h, "10.0.0.9", password="secret").session.close_code == 1008
    h.clock.now += 1.5
    assert logon(h.peer("10.0.0.9"), "alice")["status"] == "success", "a minute later logons work again"


def test_the_block_is_logged_once_as_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    h = Harness(topics=PLAIN, auth=USERS)
    with caplog.at_level(logging.WARNING, logger="server.access"):
        for _ in range(8):
            attempt(h, "192.0.2.1", user="nobody")
    lines = [r for r in caplog.records if r.name == "server.access"]
    assert len(lines) == 1 and lines[0].levelno == logging.WARNING and "192.0.2.1" in lines[0].getMessage()


def test_failures_older_than_a_minute_do_not_count() -> None:
    h = Harness(topics=PLAIN, auth=USERS)
    for _ in range(4):
        attempt(h, "10.0.0.9")
    h.clock.now += 61
    for _ in range(4):
        attempt(h, "10.0.0.9")
    assert logon(h.peer("10.0.0.9"), "alice")["status"] == "success"


def test_unknown_users_count_as_failures_too() -> None:
    h = Harness(topics=PLAIN, auth=USERS)
    for index in range(5):
        attempt(h, "10.0.0.9", user=f"nobody{index}")
    out = h.peer("10.0.0.9").send({"c": "logon", "cid": "l", "user_id": "bob", "pw": "hunter2"})
    assert out[0]["reason"] == "auth failure: too many attempts"


def test_the_failure_table_is_bounded() -> None:
    throttle = LogonThrottle(max_addresses=100)
    for index in range(1000):
        throttle.failed(f"10.1.{index // 256}.{index % 256}", 1000.0 + index * 0.001)
    assert len(throttle) <= 100
    throttle.failed("10.9.9.9", 2000.0)
    assert len(throttle) == 1, "entries older than the window and the block are pruned"


# -- passwords -----------------------------------------------------------------------------


def test_passwords_are_compared_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[Any, Any]] = []
    real = hmac.compare_digest

    def spy(a: Any, b: Any) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    plain = UserConfig("u", "pässwörd", None, (), (), {})
    digest = hashlib.sha256("pässwörd".encode()).hexdigest().upper()
    hashed = UserConfig("u", None, digest, (), (), {})
    for user in (plain, hashed):
        calls.clear()
        assert user.check_password("pässwörd")
        assert not user.check_password("pässwörd!")
        assert not user.check_password(None)
        assert len(calls) == 2, "both comparisons go through hmac.compare_digest"


def test_the_logon_ack_carries_the_bookmark_of_now() -> None:
    """PROTOCOL 4: the logon ack carries ``bm``, the newest change applied when the logon was
    taken; a bookmark subscription from it replays what changed after the logon, and only that."""
    h = Harness(topics=DURABLE, auth=USERS)
    feed = h.peer()
    first = logon(feed, "alice")
    assert first["bm"] == str(h.broker.lsns.last), "before any change: the epoch's start"
    feed.send(publish(1), publish(2))
    before = entries_of(h)
    watcher = h.peer()
    mark = logon(watcher, "bob", name=None)["bm"]
    assert mark == str(before[-1].lsn)
    feed.send(publish(3))
    after = entries_of(h)
    watcher.send({"c": "subscribe", "t": "orders", "sub_id": "b", "bm": mark})
    replay_all(h, before + after)
    assert [m["data"]["order"] for m in watcher.take() if m["c"] == "p"] == [3]
