"""Resume reads (docs/protocol.md, Resuming a view) from a topic's history, as the store writes it:
for each record changed after a bookmark, how it was then and how its last change ended it; and the
floor below which a bookmark cannot be resumed, raised by every bound."""

from __future__ import annotations

from server.core.records.version import RecordVersion
from server.core.sow.history import ENTRY_BYTES, History, Then
from server.core.sow.store import Sow


def store(max_changes: int = 100, max_age_s: float = 3600.0, max_bytes: int = 1 << 20) -> tuple[Sow, History]:
    sow = Sow()
    history = sow.history = History(max_changes, max_age_s, max_bytes)
    return sow, history


def put(sow: Sow, key: str, lsn: int, timestamp: float | None = None) -> RecordVersion:
    version = RecordVersion(key, {"id": key, "lsn": lsn}, lsn, float(lsn) if timestamp is None else timestamp)
    sow.put(version)
    return version


def test_a_record_changed_twice_after_the_bookmark_is_read_as_it_was_at_the_bookmark() -> None:
    sow, history = store()
    at_bookmark = put(sow, "a", 1)
    put(sow, "a", 2)
    put(sow, "a", 3)
    assert history.since(1) == {"a": Then(at_bookmark, None, None)}
    assert history.since(0) == {"a": Then(None, None, None)}, "before the bookmark it did not exist"
    assert history.since(3) == {}


def test_a_record_removed_after_the_bookmark_says_how_and_what_it_was_last() -> None:
    sow, history = store()
    at_bookmark = put(sow, "a", 1)
    last = put(sow, "a", 2)
    sow.remove("a", 3, 3.0, "expired")
    assert history.since(1) == {"a": Then(at_bookmark, "expired", last)}


def test_a_record_made_and_deleted_after_the_bookmark_was_not_there_then() -> None:
    sow, history = store()
    put(sow, "other", 1)
    made = put(sow, "a", 2)
    sow.remove("a", 3, 3.0)
    assert history.since(1) == {"a": Then(None, "deleted", made)}


def test_a_record_deleted_and_made_again_is_read_as_there_then_and_not_gone() -> None:
    sow, history = store()
    at_bookmark = put(sow, "a", 1)
    sow.remove("a", 2, 2.0)
    put(sow, "a", 3)
    assert history.since(1) == {"a": Then(at_bookmark, None, None)}


def test_records_come_in_the_order_of_their_first_change_after_the_bookmark() -> None:
    sow, history = store()
    for lsn, key in enumerate("abcab", start=1):
        put(sow, key, lsn)
    assert list(history.since(1)) == ["b", "c", "a"]


def test_too_many_changes_drop_the_oldest_and_raise_the_floor() -> None:
    sow, history = store(max_changes=3)
    for lsn in range(1, 6):
        put(sow, "a", lsn)
    assert len(history) == 3 and history.floor == 2
    assert history.holds(2) and not history.holds(1)
    assert set(history.since(2)) == {"a"}


def test_the_bytes_of_the_replaced_versions_bound_the_history() -> None:
    sow, history = store(max_bytes=3 * ENTRY_BYTES)
    first = put(sow, "a", 1)  # a new record: ENTRY_BYTES
    put(sow, "a", 2)  # keeps ``first`` alive: ENTRY_BYTES and its encoding
    assert history.bytes == 2 * ENTRY_BYTES + len(first.encoded) and history.floor == 0
    put(sow, "a", 3)  # over the bound: the oldest goes
    assert history.floor == 1 and not history.holds(0)
    assert history.bytes <= 3 * ENTRY_BYTES


def test_changes_older_than_the_age_bound_leave_when_a_newer_one_comes() -> None:
    sow, history = store(max_age_s=10.0)
    put(sow, "a", 1, timestamp=0.0)
    put(sow, "b", 2, timestamp=5.0)
    put(sow, "c", 3, timestamp=12.0)  # the change at 0.0 is older than 10 s now
    assert history.floor == 1 and len(history) == 2
    history.trim(20.0)
    assert history.floor == 2 and list(history.since(2)) == ["c"]


def test_a_reset_forgets_every_change_and_starts_at_its_floor() -> None:
    sow, history = store()
    put(sow, "a", 1)
    put(sow, "a", 2)
    history.reset(7)
    assert len(history) == 0 and history.bytes == 0 and history.floor == 7
    assert not history.holds(6) and history.since(7) == {}
