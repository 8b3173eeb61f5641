"""Publish stores: what is kept until persisted, and what survives the publisher's restart."""

from __future__ import annotations

from pathlib import Path

from server.client import FilePublishStore, MemoryPublishStore


def test_memory_store_keeps_until_persisted() -> None:
    store = MemoryPublishStore()
    for seq in range(1, 6):
        store.add(seq, f"m{seq}".encode())
    store.discard_through(3)
    assert list(store.pending()) == [(4, b"m4"), (5, b"m5")]
    assert store.last_seq == 5 and len(store) == 2


def test_file_store_survives_a_restart_and_ignores_a_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "feed.store"
    store = FilePublishStore(path)
    for seq in range(1, 4):
        store.add(seq, f'{{"s":{seq}}}'.encode())
    store.sync()
    store.discard_through(1)
    store.close()
    with path.open("ab") as handle:
        handle.write(b'[4, "{\\"s\\":4')  # a crash in the middle of writing the next publish
    again = FilePublishStore(path)
    assert list(again.pending()) == [(2, b'{"s":2}'), (3, b'{"s":3}')]
    assert again.last_seq == 3
    again.add(4, b'{"s":4}')
    again.sync()
    again.close()
    again = FilePublishStore(path)
    assert [seq for seq, _ in again.pending()] == [2, 3, 4], "a torn line is cut, not written after"
    again.discard_through(4)
    again.close()
    compacted = FilePublishStore(path)
    assert len(compacted) == 0 and compacted.last_seq == 4, "compacted, but the sequence is remembered"
    assert path.read_bytes().count(b"\n") == 1
    compacted.close()
