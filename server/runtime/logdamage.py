"""Damage found at start-up: every intact log entry after the snapshot, where the damaged
stretches are and the LSNs around them, a damaged newest snapshot and what it takes with it,
and the lines that say so.

A torn last frame is a write cut short by a crash (never acknowledged); any other unreadable
frame is damage to acknowledged data, which the log store refuses to start with unless told to
(logstore.py).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.handlers import recovery
from ..core.sow.txlog import Damage, SegmentScan, scan_segment

log = logging.getLogger("server.txlog")

START_ANYWAY = "--recover-damaged-log (or recover_damaged_log = true under [server])"


@dataclass(slots=True)
class Found:
    """A damaged stretch of a segment, where it was, and the LSNs around it."""

    segment: Path
    damage: Damage
    lsn_before: int  # the last intact change before it
    lsn_after: int | None = None  # the first intact change after it; None: none in the log

    def describe(self) -> str:
        return f"{self.segment} bytes {self.damage.start}-{self.damage.end}"


@dataclass(slots=True)
class Tail:
    """What recovery read from the log segments after the snapshot."""

    payloads: list[Any] = field(default_factory=list)
    scans: dict[Path, SegmentScan] = field(default_factory=dict)
    damaged: list[Found] = field(default_factory=list)
    waiting: list[Found] = field(default_factory=list)  # damage not yet followed by an intact change
    lsn: int = 0  # the last intact change


def read_tail(segments: list[Path], covered: int) -> Tail:
    """Every intact entry of the segments after LSN ``covered``, and where damage is. Read only."""
    tail = Tail()
    lsn = 0  # the last intact change read so far
    for index, segment in enumerate(segments):
        following = segments[index + 1] if index + 1 < len(segments) else None
        if following is not None and int(following.stem) - 1 <= covered:
            continue  # every entry of this segment is in the snapshot
        found = scan_segment(segment.read_bytes(), last=following is None)
        tail.scans[segment] = found
        lsn = max(lsn, int(segment.stem) - 1)  # a segment's name is a lower bound of its LSNs
        lsn = _collect(tail, segment, found, lsn)
    tail.damaged += tail.waiting  # damage with no intact change after it, up to the end
    tail.lsn = lsn
    return tail


def _collect(tail: Tail, segment: Path, found: SegmentScan, lsn: int) -> int:
    """Add ``found``'s entries and damage to ``tail`` in file order; the last LSN read."""
    damage = iter(found.damaged)
    next_damage = next(damage, None)
    for start, _, batch in found.frames:
        while next_damage is not None and next_damage.start < start:
            tail.waiting.append(Found(segment, next_damage, lsn))
            next_damage = next(damage, None)
        if batch:
            for waiting in tail.waiting:
                waiting.lsn_after = batch[0][0]
            tail.damaged += tail.waiting
            tail.waiting = []
            tail.payloads.extend(batch)
            lsn = batch[-1][0]
    while next_damage is not None:
        tail.waiting.append(Found(segment, next_damage, lsn))
        next_damage = next(damage, None)
    return lsn


def report(damaged: list[Found]) -> None:
    for found in damaged:
        after = "up to the end of the log" if found.lsn_after is None else f"before LSN {found.lsn_after}"
        log.error(
            "TRANSACTION LOG DAMAGED: %s (%d bytes) hold no readable frame: acknowledged changes "
            "after LSN %d and %s are lost",
            found.describe(),
            found.damage.end - found.damage.start,
            found.lsn_before,
            after,
        )


def refusal(damaged: list[Found]) -> str:
    """The one line the process exits with when acknowledged log frames are damaged."""
    more = f" and {len(damaged) - 1} more damaged stretches" if len(damaged) > 1 else ""
    return (
        f"transaction log damaged: {damaged[0].describe()}{more} hold no readable frame; "
        f"nothing was changed on disk; start with {START_ANYWAY} to keep the damaged bytes aside "
        "and start with every intact frame"
    )


def newest_snapshot(snapshot_dir: Path) -> tuple[recovery.Snapshot | None, list[Path]]:
    """The newest intact snapshot, and the newer ones that are damaged."""
    damaged: list[Path] = []
    for path in sorted(snapshot_dir.glob("*.snapshot"), reverse=True):
        snapshot = recovery.decode_snapshot(path.read_bytes())
        if snapshot is not None:
            return snapshot, damaged
        log.warning("snapshot %s is incomplete or damaged; trying an older one", path)
        damaged.append(path)
    return None, damaged


def lost_with_snapshot(damaged: list[Path], covered: int, segments: list[Path]) -> str | None:
    """What a damaged snapshot takes with it, when retention has already removed log segments
    it covered: the changes after the snapshot recovery falls back to (LSN
    ``covered``) up to the start of the oldest segment left are then nowhere.
    A segment is named after the LSN following the last one before it, so that start is
    exact. None: the log still holds everything after the older snapshot."""
    if not damaged:
        return None
    newest = damaged[0]
    first = int(segments[0].stem) if segments else None
    lost_up_to = int(newest.stem) if first is None else min(int(newest.stem), first - 1)
    if lost_up_to <= covered:
        return None
    return (
        f"snapshot {newest} is damaged and the log segments it covered are gone: acknowledged "
        f"changes after LSN {covered} up to LSN {lost_up_to} are lost"
    )
