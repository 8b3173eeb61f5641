"""Publish stores: what is kept until persisted, and what survives the publisher's restart; both
stores driven by a Hypothesis state machine against a trivially correct reference (the file store
also reopened, and reopened after a torn last line, at any point)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import orjson
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

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


def test_sequences_are_added_in_increasing_order() -> None:
    store = MemoryPublishStore()
    store.add(3, b"m3")
    with pytest.raises(ValueError, match="only increase"):
        store.add(3, b"again")
    store.discard_through(7)  # the server has more than this store held (it was a new one)
    with pytest.raises(ValueError, match="only increase"):
        store.add(5, b"m5")
    store.add(8, b"m8")
    assert list(store.pending()) == [(8, b"m8")]


def test_a_file_with_a_sequence_out_of_order_opens_without_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "feed.store"
    path.write_bytes(b'[5]\n[3,"{}"]\n[6,"{\\"s\\":6}"]\n')
    store = FilePublishStore(path)
    assert list(store.pending()) == [(6, b'{"s":6}')] and store.last_seq == 6
    assert "publish 3 after 5 skipped" in caplog.text
    store.close()


# Messages as the publisher writes them (JSON), and text that a line-based file must survive.
MESSAGES = st.one_of(
    st.text(max_size=12).map(lambda text: orjson.dumps({"data": text})),
    st.text(alphabet='\n\r"\\[],{} é\u2028', max_size=8).map(str.encode),
)


class Reference:
    """A trivially correct store: a sorted list of what is pending, and the last sequence."""

    def __init__(self) -> None:
        self.pending: list[tuple[int, bytes]] = []
        self.last_seq = 0

    def add(self, seq: int, message: bytes) -> None:
        self.pending.append((seq, message))
        self.last_seq = seq

    def discard_through(self, seq: int) -> None:
        self.pending = [(s, m) for s, m in self.pending if s > seq]
        self.last_seq = max(self.last_seq, seq)


class StoreMachine(RuleBasedStateMachine):
    """Adds, acks and reads of a store against the reference (subclassed for each store)."""

    def __init__(self) -> None:
        super().__init__()
        self.reference = Reference()
        self.store: MemoryPublishStore = self.open()

    def open(self) -> MemoryPublishStore:
        return MemoryPublishStore()

    @rule(gap=st.integers(1, 3), messages=st.lists(MESSAGES, min_size=1, max_size=4))
    def add(self, gap: int, messages: list[bytes]) -> None:
        """A ``publish_many``: the next sequences (after a gap, as after a server's higher ack), then sync."""
        seq = self.reference.last_seq + gap - 1
        for message in messages:
            seq += 1
            self.store.add(seq, message)
            self.reference.add(seq, message)
        self.store.sync()

    @rule(data=st.data())
    def ack(self, data: st.DataObject) -> None:
        """A persisted ack: anywhere from before the oldest pending to past the newest sent."""
        seq = data.draw(st.integers(0, self.reference.last_seq + 2))
        self.store.discard_through(seq)
        self.reference.discard_through(seq)

    @invariant()
    def holds_what_the_reference_holds(self) -> None:
        assert list(self.store.pending()) == self.reference.pending
        assert len(self.store) == len(self.reference.pending)
        assert self.store.last_seq == self.reference.last_seq

    def teardown(self) -> None:
        if isinstance(self.store, FilePublishStore):
            self.store.close()


class FileStoreMachine(StoreMachine):
    """The same, and the publisher restarted at any point (with a torn line of a publish it was
    writing when it died): the store read back from its file holds what the reference holds."""

    def open(self) -> MemoryPublishStore:
        if not hasattr(self, "directory"):
            self.directory = tempfile.TemporaryDirectory()
        return FilePublishStore(Path(self.directory.name) / "feed.store")

    @rule()
    def reopen(self) -> None:
        assert isinstance(self.store, FilePublishStore)
        self.store.close()
        self.store = self.open()

    @rule(message=MESSAGES, cut=st.integers(1, 1000))
    def die_writing(self, message: bytes, cut: int) -> None:
        """The process died while it wrote the next publish's line (never synced, never sent)."""
        assert isinstance(self.store, FilePublishStore)
        self.store.close()
        line = orjson.dumps([self.reference.last_seq + 1, message.decode()]) + b"\n"
        with self.store.path.open("ab") as handle:
            handle.write(line[: min(cut, len(line) - 1)])
        self.store = self.open()

    def teardown(self) -> None:
        super().teardown()
        self.directory.cleanup()


TestMemoryStoreModel = StoreMachine.TestCase
TestFileStoreModel = FileStoreMachine.TestCase
TestMemoryStoreModel.settings = settings(max_examples=150, stateful_step_count=40)
TestFileStoreModel.settings = settings(max_examples=150, stateful_step_count=40)
