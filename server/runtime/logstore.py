"""The transaction log on disk: recovery at start-up, group commit, snapshots, retention.

Layout under ``data_dir``: ``txlog/<first LSN>.log`` segments of framed entries (core/txlog.py)
and ``snapshots/<LSN>.snapshot`` files (core/recovery.py). Every write, fsync and read runs on one
I/O thread, in order, so the event loop never waits for the disk. Group commit: whatever the
engine appended while the previous write was being synced goes out in the next single write and
single fsync, and only then are the persisted acks it covers sent.

A torn or corrupted frame (a crash in the middle of a write, a damaged disk) ends the log: the
segment is truncated to the last good frame, any later segment is set aside as ``*.corrupt``,
a warning names the place, and the server starts with everything before it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ..core import recovery
from ..core.engine import Engine
from ..core.txlog import Entry, entries_in, scan

log = logging.getLogger("server.txlog")

SEGMENT_BYTES = 64 * 1024 * 1024
# Snapshot once the log tail holds this many entries, or twice the durable records if more:
# recovery then replays at most about that many, whatever the history.
SNAPSHOT_MIN_ENTRIES = 100_000


class LogStore:
    def __init__(self, data_dir: Path, engine: Engine, retention_s: float, retention_bytes: int) -> None:
        self.engine = engine
        self.log_dir = data_dir / "txlog"
        self.snapshot_dir = data_dir / "snapshots"
        self.retention_s = retention_s
        self.retention_bytes = retention_bytes
        self._io = ThreadPoolExecutor(max_workers=1, thread_name_prefix="txlog")
        self._fd: int | None = None
        self._segment_bytes = 0
        self._snapshotting = False
        self._wake = asyncio.Event()
        self._writer: asyncio.Task[None] | None = None
        self._last_snapshot_lsn = 0

    # -- start-up -------------------------------------------------------------------------

    def recover(self) -> recovery.Restored:
        """Rebuild the engine's durable state from disk (before the server accepts connections)."""
        started = time.perf_counter()
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.snapshot_dir.mkdir(parents=True, exist_ok=True)
        snapshot = self._newest_snapshot()
        self._last_snapshot_lsn = snapshot.lsn if snapshot is not None else 0
        payloads: list[Any] = []
        segments = self._segments()
        covered = snapshot.lsn if snapshot is not None else 0
        for index, segment in enumerate(segments):
            following = segments[index + 1] if index + 1 < len(segments) else None
            if following is not None and int(following.stem) - 1 <= covered:
                continue  # every entry of this segment is in the snapshot
            found = scan(segment.read_bytes())
            payloads.extend(entries_in(found.payloads))
            if found.problem is not None:
                self._cut(segment, found.good_bytes, found.problem, segments[index + 1 :])
                break
        restored = recovery.restore(self.engine, snapshot, payloads)
        self._open_segment(restored.lsn + 1)
        log.info(
            "recovered %d records of durable topics (snapshot at LSN %d, %d log entries after it) in %.2f s",
            restored.records,
            self._last_snapshot_lsn,
            restored.entries,
            time.perf_counter() - started,
        )
        return restored

    def _cut(self, segment: Path, good_bytes: int, problem: str, later: list[Path]) -> None:
        log.warning(
            "transaction log %s: %s; keeping the %d bytes before it, the server starts with what they hold",
            segment,
            problem,
            good_bytes,
        )
        with segment.open("r+b") as handle:
            handle.truncate(good_bytes)
            os.fsync(handle.fileno())
        for path in later:
            aside = path.with_suffix(".corrupt")
            path.rename(aside)
            log.warning("transaction log %s comes after the damage; set aside as %s", path, aside)

    def _segments(self) -> list[Path]:
        return sorted(self.log_dir.glob("*.log"))

    def _newest_snapshot(self) -> recovery.Snapshot | None:
        for path in sorted(self.snapshot_dir.glob("*.snapshot"), reverse=True):
            snapshot = recovery.decode_snapshot(path.read_bytes())
            if snapshot is not None:
                return snapshot
            log.warning("snapshot %s is incomplete or damaged; trying an older one", path)
        return None

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
        self.engine.on_log = self._wake.set
        self._writer = asyncio.create_task(self._write_loop(), name="txlog-writer")

    async def _write_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._wake.wait()
            self._wake.clear()
            while (taken := self.engine.durability.take()) is not None:
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
                self.engine.made_durable(lsn)
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
        tail = self.engine.durability.last_lsn - self._last_snapshot_lsn
        records = sum(len(t.records) for t in self.engine.topics.values() if t.config and t.config.durable)
        return tail >= max(SNAPSHOT_MIN_ENTRIES, 2 * records)

    async def _snapshot(self) -> None:
        try:
            state = recovery.capture(self.engine)
            await asyncio.get_running_loop().run_in_executor(self._io, self._write_snapshot, state)
            self._last_snapshot_lsn = state.lsn
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
        """Delete segments the snapshot covers that are older or larger than retention allows."""
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
            if now - segment.stat().st_mtime > self.retention_s or total > self.retention_bytes:
                segment.unlink()
                total -= size
                log.info("log retention: removed %s", segment.name)

    # -- replay ---------------------------------------------------------------------------

    async def read(self, after_lsn: int, since: float | None, until_lsn: int) -> list[Entry]:
        """Log entries with ``after_lsn < lsn <= until_lsn`` (and timestamp >= ``since``), in order."""
        return await asyncio.get_running_loop().run_in_executor(
            self._io, self._read, after_lsn, since, until_lsn
        )

    def _read(self, after_lsn: int, since: float | None, until_lsn: int) -> list[Entry]:
        entries: list[Entry] = []
        segments = self._segments()
        for segment, following in zip(segments, [*segments[1:], None], strict=True):
            if following is not None and int(following.stem) - 1 <= after_lsn:
                continue  # every entry of this segment is before the bookmark
            for payload in entries_in(scan(segment.read_bytes()).payloads):
                entry = Entry.from_payload(payload)
                if entry.lsn > until_lsn:
                    return entries
                if entry.lsn > after_lsn and (since is None or entry.timestamp >= since):
                    entries.append(entry)
        return entries

    # -- shutdown -------------------------------------------------------------------------

    async def close(self) -> None:
        """Write what is pending, then take a snapshot so the next start is quick."""
        if self._writer is not None:
            self._writer.cancel()
        loop = asyncio.get_running_loop()
        while (taken := self.engine.durability.take()) is not None:
            data, lsn = taken
            await loop.run_in_executor(self._io, self._write, data, lsn)
            self.engine.made_durable(lsn)
        if self.engine.durability.last_lsn > self._last_snapshot_lsn:
            await loop.run_in_executor(self._io, self._write_snapshot, recovery.capture(self.engine))
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self._io.shutdown(wait=True)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
