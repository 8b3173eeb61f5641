"""The transaction log's format (sow/txlog.py): an entry framed in a group commit reads back as
the same entry, and a transaction's changes come back as entries of its LSN and time."""

from __future__ import annotations

from server.core.sow.txlog import (
    DELETE,
    EXPIRE,
    OWNER,
    PUBLISH,
    SEQUENCE,
    TX,
    LogEntry,
    changed_topics,
    entries_in,
    frame_entries,
    scan,
    scan_segment,
    transaction_changes,
)

ENTRIES = [
    LogEntry(1, PUBLISH, "orders", "k1", {"id": 1, "px": 1.5, "tags": ["a"]}, "feed", 1, 10.25, 70.0),
    LogEntry(2, DELETE, "orders", "k1", None, "feed", 2, 11.0, None),
    LogEntry(3, EXPIRE, "quotes", "k2", 1, None, None, 12.0, None),
    LogEntry(4, SEQUENCE, "orders", "", None, "feed", 3, 13.0, None),
    LogEntry(5, OWNER, "", "", "alice", "feed", None, 14.0, None),
]


def test_entries_framed_as_group_commits_read_back_as_the_same_entries() -> None:
    log = frame_entries([e.encode() for e in ENTRIES[:2]]) + frame_entries([e.encode() for e in ENTRIES[2:]])
    found = scan(log)
    assert found.problem is None and found.good_bytes == len(log) and len(found.payloads) == 2
    assert [LogEntry.from_payload(p) for p in entries_in(found.payloads)] == ENTRIES
    segment = scan_segment(log)
    assert segment.damaged == [] and segment.torn_at is None
    assert entries_in(segment.payloads) == entries_in(found.payloads)


def test_an_entrys_encoding_is_not_part_of_its_payload() -> None:
    entry = LogEntry(1, PUBLISH, "t", "k", {"a": 1}, None, None, 1.0, None, encoded=b'{"a":1}')
    back = LogEntry.from_payload(entries_in(scan(frame_entries([entry.encode()])).payloads)[0])
    assert back.encoded is None and back.data == {"a": 1}


def test_a_transactions_changes_are_entries_of_its_lsn_and_time_without_a_sequence() -> None:
    changes = [[PUBLISH, "orders", "k1", {"id": 1}, 30.0], [DELETE, "quotes", "k2", None, None]]
    tx = LogEntry(9, TX, "", "", changes, "feed", 4, 20.0, None)
    assert transaction_changes(tx) == [
        LogEntry(9, PUBLISH, "orders", "k1", {"id": 1}, None, None, 20.0, 30.0),
        LogEntry(9, DELETE, "quotes", "k2", None, None, None, 20.0, None),
    ]
    assert set(changed_topics(tx)) == {"orders", "quotes"}


def test_only_changes_of_records_name_a_changed_topic() -> None:
    assert [list(changed_topics(e)) for e in ENTRIES] == [["orders"], ["orders"], ["quotes"], [], []]
