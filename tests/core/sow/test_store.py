"""The SOW's store (sow/store.py), alone: each write answers with the change it made, and the
history it keeps says the same thing as the records. No engine, no topic."""

from __future__ import annotations

from typing import Any

from server.core.records.version import RecordVersion
from server.core.sow.history import History, Past, past
from server.core.sow.store import NO_CHANGE, Sow
from server.core.sow.txlog import DELETE, EXPIRE, PUBLISH, SEQUENCE, LogEntry


def store(history: bool = True) -> Sow:
    sow = Sow()
    if history:
        sow.history = History(100, 3600.0, 1 << 20)
    return sow


def version(key: str, seq: int, timestamp: float = 1.0, expires_at: float | None = None) -> RecordVersion:
    return RecordVersion(key, {"id": key, "seq": seq}, seq, timestamp, expires_at)


def entry(lsn: int, op: str, key: str, data: Any = None, expires_at: float | None = None) -> LogEntry:
    return LogEntry(lsn, op, "t", key, data, None, None, float(lsn), expires_at)


def held(sow: Sow) -> list[Past]:
    assert sow.history is not None
    return [past(change) for change in sow.history.held()]


# -- put and remove -------------------------------------------------------------------------


def test_put_answers_what_it_replaced_and_what_is_there_now() -> None:
    sow = store()
    first, second = version("a", 1), version("a", 2, timestamp=2.0)
    assert sow.put(first) == (None, first)
    assert sow.put(second) == (first, second)
    assert dict(sow.records) == {"a": second} and len(sow) == 1
    assert held(sow) == [Past(1, "a", None, None, 1.0), Past(2, "a", first, None, 2.0)]
    assert sow.history is not None and sow.history.held()[0] is first, "a new record costs no tuple"


def test_remove_answers_the_version_removed_and_notes_how_it_went() -> None:
    sow = store()
    kept, gone = version("a", 1), version("b", 2)
    sow.put(kept)
    sow.put(gone)
    assert sow.remove("b", 3, 3.0, "expired") == (gone, None)
    assert sow.remove("b", 4, 4.0) == NO_CHANGE, "nothing left to remove: no change, nothing noted"
    assert dict(sow.records) == {"a": kept}
    assert held(sow)[-1] == Past(3, "b", gone, "expired", 3.0)
    assert len(held(sow)) == 3


def test_a_store_without_a_history_writes_the_same_records() -> None:
    sow = store(history=False)
    first = version("a", 1)
    assert sow.put(first) == (None, first)
    assert sow.remove("a", 2, 2.0) == (first, None)
    assert sow.records == {} and sow.history is None


def test_records_is_a_view_of_the_store_not_a_copy() -> None:
    sow = store()
    records = sow.records
    sow.put(version("a", 1))
    assert list(records) == ["a"]


# -- apply: one log entry -------------------------------------------------------------------


def test_apply_makes_a_version_of_the_entrys_lsn_time_expiry_and_encoding() -> None:
    sow = store()
    old, new = sow.apply(LogEntry(7, PUBLISH, "t", "a", {"id": "a"}, "feed", 3, 5.5, 60.0, b'{"id":"a"}'))
    assert old is None and new is not None
    assert (new.key, new.data, new.seq, new.timestamp, new.expires_at) == ("a", {"id": "a"}, 7, 5.5, 60.0)
    assert new.encoded == b'{"id":"a"}'
    assert sow.records["a"] is new


def test_apply_delete_removes_and_a_delete_of_nothing_changes_nothing() -> None:
    sow = store()
    _, first = sow.apply(entry(1, PUBLISH, "a", {"id": "a"}))
    assert sow.apply(entry(2, DELETE, "a")) == (first, None)
    assert sow.apply(entry(3, DELETE, "a")) == NO_CHANGE
    assert held(sow)[-1] == Past(2, "a", first, "deleted", 2.0)


def test_an_expiry_removes_only_the_version_it_names() -> None:
    sow = store()
    sow.apply(entry(1, PUBLISH, "a", {"v": 1}))
    _, second = sow.apply(entry(2, PUBLISH, "a", {"v": 2}))
    assert sow.apply(entry(3, EXPIRE, "a", data=1)) == NO_CHANGE, "version 1 was replaced: a later lifetime"
    assert sow.records["a"] is second
    assert sow.apply(entry(4, EXPIRE, "a", data=2)) == (second, None)
    assert held(sow)[-1] == Past(4, "a", second, "expired", 4.0)


def test_a_local_expiry_names_no_version_and_removes_whatever_is_there() -> None:
    sow = store()
    _, only = sow.apply(entry(1, PUBLISH, "a", {"v": 1}))
    assert sow.apply(entry(2, EXPIRE, "a")) == (only, None)
    assert sow.apply(entry(3, EXPIRE, "a")) == NO_CHANGE, "expired already"


def test_an_entry_that_changes_no_record_changes_nothing() -> None:
    sow = store()
    sow.apply(entry(1, PUBLISH, "a", {"v": 1}))
    before = held(sow)
    assert sow.apply(LogEntry(2, SEQUENCE, "t", "", None, "feed", 9, 2.0, None)) == NO_CHANGE
    assert list(sow.records) == ["a"] and held(sow) == before


# -- load: a whole SOW ----------------------------------------------------------------------


def test_loading_an_empty_store_stores_every_version_compact_and_the_history_starts_at_the_floor() -> None:
    sow = store()
    sow.put(version("z", 1))  # a history that had changes: a load forgets them
    sow.remove("z", 2, 2.0)
    a, b = version("a", 5, expires_at=9.0), version("b", 6)
    assert sow.load([a, b], 8) == [(None, a), (None, b)]
    assert dict(sow.records) == {"a": a, "b": b}
    assert a.is_compact and b.is_compact, "stored records keep only their encoding"
    assert a.data == {"id": "a", "seq": 5} and a.expires_at == 9.0
    assert sow.history is not None and sow.history.floor == 8 and held(sow) == []
    assert not sow.history.holds(7) and sow.history.holds(8)


def test_loading_over_records_answers_only_the_differences() -> None:
    sow = store()
    same, replaced, removed = version("same", 1), version("replaced", 2), version("removed", 3)
    for each in (same, replaced, removed):
        sow.put(each)
    again, newer, added = version("same", 1), version("replaced", 4), version("added", 5)
    assert sow.load([again, newer, added], 5) == [(replaced, newer), (None, added), (removed, None)]
    assert sow.records["same"] is same, "a record already at its version is left as it is"
    assert sorted(sow.records) == ["added", "replaced", "same"]


def test_loading_nothing_empties_the_store() -> None:
    sow = store()
    only = version("a", 1)
    sow.put(only)
    assert sow.load((), 3) == [(only, None)]
    assert sow.records == {} and sow.history is not None and sow.history.floor == 3


def test_load_keeps_the_changes_the_snapshot_kept_and_resumes_from_them() -> None:
    sow = store()
    before = version("a", 3)
    now = version("a", 5)
    kept = [Past(4, "b", None, None, 4.0), Past(5, "a", before, None, 5.0)]
    sow.load([now, version("b", 4)], 2, kept)
    assert held(sow) == kept
    assert sow.history is not None
    assert set(sow.history.since(3)) == {"a", "b"}
    assert sow.history.since(3)["a"].old is before, "how the record was at the bookmark"
    assert sow.history.since(4).keys() == {"a"}


def test_a_store_without_a_history_loads_the_same_records() -> None:
    sow = store(history=False)
    a = version("a", 1)
    assert sow.load([a], 1, [Past(1, "a", None, None, 1.0)]) == [(None, a)]
    assert dict(sow.records) == {"a": a} and sow.history is None


# -- every version, shared ---------------------------------------------------------------------


def test_every_version_is_one_list_until_a_change_and_a_change_leaves_the_old_list_as_it_was() -> None:
    sow = store()
    sow.put(version("a", 1))
    sow.put(version("b", 2))
    first = sow.every_version()
    assert sow.every_version() is first, "snapshots before a change share the list"
    changes = [
        lambda: sow.put(version("c", 3)),
        lambda: sow.put(version("a", 4)),
        lambda: sow.remove("b", 5, 5.0),
        lambda: sow.apply(entry(6, DELETE, "c")),
        lambda: sow.load([version("z", 7)], 7),
    ]
    for change in changes:
        before = sow.every_version()
        kept = list(before)
        change()
        after = sow.every_version()
        assert after is not before and before == kept, "the snapshot taken before is as it was"
        assert after == list(sow.records.values())


def test_a_change_of_nothing_keeps_the_list() -> None:
    sow = store()
    sow.put(version("a", 1))
    every = sow.every_version()
    sow.remove("missing", 2, 2.0)
    sow.apply(entry(3, EXPIRE, "missing"))
    assert sow.every_version() is every
