"""The transaction log on disk: recovery at start-up, group commit, snapshots, retention.

Layout under ``data_dir``: ``txlog/<first LSN>.log`` segments of framed entries (core/sow/txlog.py)
and ``snapshots/<LSN>.snapshot`` files (core/handlers/recovery.py). Every write, fsync and read runs on one
I/O thread, in order, so the event loop never waits for the disk. Group commit: whatever the
engine appended while the previous write was being synced goes out in the next single write and
single fsync, and only then are the persisted acks it covers sent.

A torn last frame (a crash in the middle of a write: never acknowledged) is cut off with a
warning. Any other bad frame is damage to acknowledged data: recovery reads on past it and keeps
every intact frame after it (core/sow/txlog.py ``scan_segment``), but the server refuses to start
(``StartupError``, nothing changed on disk) unless ``recover_damaged_log`` says to. Then the
damaged bytes are kept aside as ``<segment>.damaged-<offset>``, the segment is rewritten with its
intact frames, every damaged stretch is logged at ERROR level and counted
(``damaged_frames``, the ``push_log_damaged_frames_total`` metric).

Before the server accepts connections, recovery claims a new LSN epoch in ``epochs.json`` and
records the LSNs that a crash or damage lost, so bookmarks never repeat (core/broker/bookmarks.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import time
from collections.abc import AsyncGenerator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..core.broker.bookmarks import EpochHistory, epoch_of
from ..core.broker.broker import Broker
from ..core.errors import StartupError
from ..core.handlers import recovery
from ..core.sow.txlog import Damage, LogEntry, SegmentScan
from .logdamage import (
    START_ANYWAY,
    Found,
    Tail,
    lost_with_snapshot,
    newest_snapshot,
    read_tail,
    refusal,
    report,
)
from .logreader import Cursor, LogReader
from .pump import Pump

log = logging.getLogger("server.txlog")

SEGMENT_BYTES = 64 * 1024 * 1024
# Snapshot once the log tail holds this many entries, or twice the durable records if more:
# recovery then replays at most about that many, whatever the history.
SNAPSHOT_MIN_ENTRIES = 100_000
# Without epochs.json, but with a log written with epochs, runs that crashed before writing
# anything may have claimed epochs above the log's: jump well past them.
EPOCH_JUMP_WITHOUT_HISTORY = 1000


class LogStore:
    def __init__(
        self,
        data_dir: Path,
        broker: Broker,
        pump: Pump,
        retention_s: float,
        retention_bytes: int,
        recover_damaged: bool = False,
    ) -> None:
        """``pump`` wakes the writer when entries wait to be written (and runs after the persisted
        acks a write makes due are sent)."""
        self.broker = broker
        self.pump = pump
        self.recover_damaged = recover_damaged  # start even when acknowledged frames are damaged
        self.epoch_file = data_dir / "epochs.json"
        self._history = EpochHistory()
        self._history_unknown = False  # epochs.json was damaged: earlier epochs are not known
        self.damaged_frames = 0  # damaged stretches found in the log (each one frame or more)
        self.log_dir = data_dir / "txlog"
        self.reader = LogReader(self.log_dir, self._count_damage)  # for bookmark replays
        self.snapshot_dir = data_dir / "snapshots"
        self.retention_s = retention_s
        self.retention_bytes = retention_bytes
        self._io = ThreadPoolExecutor(max_workers=1, thread_name_prefix="txlog")
        self._fd: int | None = None
        self._segment_bytes = 0
        self._snapshotting = False
        self._writer: asyncio.Task[None] | None = None
        self._last_snapshot_lsn = 0
        self._tail_base = 0  # durability.appended when the log tail was empty (negative: replayed)

    # -- start-up -------------------------------------------------------------------------

    def recover(self) -> recovery.Restored:
        """Rebuild the broker's durable state from disk and claim a new LSN epoch (before the server
        accepts connections). Raises ``StartupError``, changing nothing on disk, when acknowledged
        log frames are damaged and ``recover_damaged`` is off."""
        started = time.perf_counter()
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.snapshot_dir.mkdir(parents=True, exist_ok=True)
        snapshot, damaged_snapshots = newest_snapshot(self.snapshot_dir)
        self._last_snapshot_lsn = snapshot.lsn if snapshot is not None else 0
        history = self._read_history()
        tail = read_tail(self._segments(), self._last_snapshot_lsn)
        report(tail.damaged)
        if tail.damaged and not self.recover_damaged:
            raise StartupError(refusal(tail.damaged))
        lost = lost_with_snapshot(damaged_snapshots, self._last_snapshot_lsn, self._segments())
        if lost is not None:
            if not self.recover_damaged:
                raise StartupError(
                    f"{lost}; nothing was changed on disk; start with {START_ANYWAY} to start from "
                    "the older snapshot and the log that is left"
                )
            self.damaged_frames += 1
            log.error("SNAPSHOT DAMAGED: %s; starting anyway (recover_damaged_log)", lost)
            for path in damaged_snapshots:
                path.rename(path.with_name(path.name + ".damaged"))
        # The lost LSNs are on disk before the damage is repaired: a crash in between finds the
        # damage again rather than forget which bookmarks it took.
        self._begin_epoch(history, max(self._last_snapshot_lsn, tail.lsn), tail.damaged)
        self._repair(tail)
        restored = recovery.restore(self.broker, snapshot, tail.payloads)
        self._tail_base = -restored.entries
        self._open_segment(restored.lsn + 1)
        log.info(
            "recovered %d records of durable topics (snapshot at LSN %d, %d log entries after it) "
            "in %.2f s; LSN epoch %d",
            restored.records,
            self._last_snapshot_lsn,
            restored.entries,
            time.perf_counter() - started,
            self._history.epoch,
        )
        return restored

    def _repair(self, tail: Tail) -> None:
        """Cut a torn tail off; keep damaged bytes aside and rewrite their segment with its intact
        frames, so the damage is reported once and the log reads clean from now on."""
        for segment, found in tail.scans.items():
            if found.damaged:
                self._set_aside(segment, found)
            elif found.torn_at is not None:
                log.warning(
                    "transaction log %s: torn last frame at byte %d (a write cut short by a crash, "
                    "never acknowledged); cut off, %d bytes kept",
                    segment,
                    found.torn_at,
                    found.torn_at,
                )
                with segment.open("r+b") as handle:
                    handle.truncate(found.torn_at)
                    os.fsync(handle.fileno())
        if tail.damaged:
            self.damaged_frames += len(tail.damaged)
            log.error(
                "TRANSACTION LOG DAMAGED: starting anyway (recover_damaged_log) with every intact frame; "
                "the changes in %d damaged stretches are lost, so the SOW may lack records or hold "
                "stale ones; their bytes are kept next to their segments as <segment>.damaged-<offset>",
                len(tail.damaged),
            )

    def _set_aside(self, segment: Path, found: SegmentScan) -> None:
        data = segment.read_bytes()
        for damage in found.damaged:
            _write_durably(_aside(segment, damage), data[damage.start : damage.end])
        intact = b"".join(data[start:end] for start, end, _ in found.frames)
        _write_durably(segment, intact)

    def _read_history(self) -> EpochHistory:
        try:
            data = self.epoch_file.read_bytes()
        except FileNotFoundError:
            return EpochHistory()
        try:
            return EpochHistory.decode(data)
        except ValueError as error:
            if not self.recover_damaged:
                raise StartupError(
                    f"{self.epoch_file} is damaged ({error}); nothing was changed on disk; start with "
                    f"{START_ANYWAY} to start a new epoch well above the log's"
                ) from None
            log.error(
                "LSN EPOCHS DAMAGED: %s (%s); starting an epoch well above the log's", self.epoch_file, error
            )
            self._history_unknown = True
            return EpochHistory()

    def _begin_epoch(self, history: EpochHistory, lsn: int, damaged: list[Found]) -> None:
        """Claim the next epoch and record the lost LSNs, on disk, before any LSN is handed out."""
        if history.epoch < 0 and (self._history_unknown or epoch_of(lsn) > 0):
            history = EpochHistory(epoch_of(lsn) + EPOCH_JUMP_WITHOUT_HISTORY, history.lost)
        lost = [(found.lsn_before, found.lsn_after) for found in damaged]
        self._history = history.restart(lsn, lost)
        _write_durably(self.epoch_file, self._history.encode())
        self.broker.lsns.begin_epoch(self._history.epoch, self._history.lost, self._claim_epoch)

    def _claim_epoch(self) -> int:
        """The LSNs of this epoch are used up: the next one, on disk before its first LSN."""
        self._history = EpochHistory(self._history.epoch + 1, self._history.lost)
        _write_durably(self.epoch_file, self._history.encode())
        log.info("LSN epoch %d used up; now %d", self._history.epoch - 1, self._history.epoch)
        return self._history.epoch

    def _segments(self) -> list[Path]:
        return sorted(self.log_dir.glob("*.log"))

    def _open_segment(self, first_lsn: int) -> None:
        segments = self._segments()
        if segments and segments[-1].stat().st_size < SEGMENT_BYTES:
            path = segments[-1]
        else:
            path = self.log_dir / f"{first_lsn:020d}.log"
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._segment_bytes = os.fstat(self._fd).st_size
        _fsync_dir(self.log_dir)

    # -- writing --------------------------------------------------------------------------

    def start(self) -> None:
        self._writer = asyncio.create_task(self._write_loop(), name="txlog-writer")

    async def _write_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self.pump.log.wait()
            self.pump.log.clear()
            while (taken := self.broker.durability.take()) is not None:
                data, lsn = taken
                while True:  # the same group commit, until the disk takes it
                    try:
                        await loop.run_in_executor(self._io, self._write, data, lsn)
                        break
                    except OSError:
                        log.exception(
                            "cannot write the transaction log; persisted acks wait, retrying in 1 s"
                        )
                        await asyncio.sleep(1)
                self.broker.made_durable(lsn)
                self.pump()
            if self._snapshot_due() and not self._snapshotting:
                self._snapshotting = True
                asyncio.create_task(self._snapshot(), name="snapshot")  # noqa: RUF006 - tracked by the flag

    def _write(self, data: bytes, lsn: int) -> None:
        assert self._fd is not None
        start = self._segment_bytes
        view = memoryview(data)
        try:
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
            os.fdatasync(self._fd)
        except OSError:
            # Cut a partial frame off again: recovery stops at the first bad frame, and the retry
            # appends this group commit whole.
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, start)
            raise
        self._segment_bytes += len(data)
        if self._segment_bytes >= SEGMENT_BYTES:
            os.close(self._fd)
            self._fd = os.open(
                self.log_dir / f"{lsn + 1:020d}.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644
            )
            self._segment_bytes = 0
            _fsync_dir(self.log_dir)

    # -- snapshots and retention ----------------------------------------------------------

    def _snapshot_due(self) -> bool:
        tail = self.broker.durability.appended - self._tail_base
        records = sum(len(t.records) for t in self.broker.topics.values() if t.durable)
        return tail >= max(SNAPSHOT_MIN_ENTRIES, 2 * records)

    async def _snapshot(self) -> None:
        try:
            state = recovery.capture(self.broker)
            appended = self.broker.durability.appended  # the entries the snapshot holds
            await asyncio.get_running_loop().run_in_executor(self._io, self._write_snapshot, state)
            self._last_snapshot_lsn = state.lsn
            self._tail_base = appended
        except OSError:
            log.exception("cannot write a snapshot; recovery will replay a longer log")
        finally:
            self._snapshotting = False

    def _write_snapshot(self, state: recovery.Snapshot) -> None:
        path = self.snapshot_dir / f"{state.lsn:020d}.snapshot"
        temporary = path.with_suffix(".tmp")
        with temporary.open("wb") as handle:
            for chunk in recovery.encode_snapshot(state):
                handle.write(chunk)
            handle.flush()
            os.fsync(handle.fileno())
        temporary.rename(path)
        _fsync_dir(self.snapshot_dir)
        for old in sorted(self.snapshot_dir.glob("*.snapshot"))[:-2]:
            old.unlink()
        self._apply_retention(state.lsn)

    def _apply_retention(self, snapshot_lsn: int) -> None:
        """Delete segments the snapshot covers that are older or larger than retention allows,
        oldest first and stopping at the first one kept: a replay that still finds the segment
        it reads then knows that none after it is missing (logreader.py)."""
        segments = self._segments()
        covered = [
            segment
            for segment, following in itertools.pairwise(segments)
            if int(following.stem) - 1 <= snapshot_lsn
        ]
        total = sum(segment.stat().st_size for segment in segments)
        now = time.time()
        for segment in covered:
            size = segment.stat().st_size
            if now - segment.stat().st_mtime <= self.retention_s and total <= self.retention_bytes:
                break
            segment.unlink()
            total -= size
            log.info("log retention: removed %s", segment.name)

    # -- replay ---------------------------------------------------------------------------

    async def replay(
        self, after_lsn: int, since: float | None, until_lsn: int
    ) -> AsyncGenerator[list[LogEntry]]:
        """Log entries with ``after_lsn < lsn <= until_lsn`` (and timestamp >= ``since``), in order,
        a chunk at a time (logreader.py): each chunk is read on the I/O thread when it is asked
        for, so a replay holds one chunk, not its range."""
        cursor = Cursor(after_lsn, since, until_lsn)
        loop = asyncio.get_running_loop()
        while not cursor.done:
            yield await loop.run_in_executor(self._io, self.reader.chunk, cursor)

    def _count_damage(self) -> None:
        self.damaged_frames += 1

    # -- shutdown -------------------------------------------------------------------------

    async def close(self) -> None:
        """Write what is pending, then take a snapshot so the next start is quick."""
        if self._writer is not None:
            self._writer.cancel()
        loop = asyncio.get_running_loop()
        while (taken := self.broker.durability.take()) is not None:
            data, lsn = taken
            await loop.run_in_executor(self._io, self._write, data, lsn)
            self.broker.made_durable(lsn)
            self.pump()
        if self.broker.durability.last_lsn > self._last_snapshot_lsn:
            await loop.run_in_executor(self._io, self._write_snapshot, recovery.capture(self.broker))
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self._io.shutdown(wait=True)


def _aside(segment: Path, damage: Damage) -> Path:
    return segment.with_name(f"{segment.name}.damaged-{damage.start}")


def _write_durably(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically: a crash leaves the old file or the new one."""
    temporary = path.with_name(path.name + ".tmp")
    with temporary.open("wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
    _fsync_dir(path.parent)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
