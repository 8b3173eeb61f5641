"""Bookmarks (docs/protocol.md, Durability): where a bookmark subscription starts reading the transaction log.

``"0"`` reads from the start of the retained log, ``"now"`` reads nothing (live only), a bookmark
from an earlier message (its ``bm``, an LSN) reads what came after it, and an ISO-8601 UTC time
reads what was applied at or after it.

A bookmark names one change forever. LSNs are handed out as messages are delivered, before the
log is on disk, so a crash can forget LSNs that clients already hold. Hence epochs: every start
claims a new epoch, persisted before the server accepts connections, and numbers its changes
``epoch << EPOCH_SHIFT | counter``. The next LSN after any restart is above every LSN ever handed
out, and a bookmark stays one plain decimal integer: opaque to clients, ordered for the server,
and the same form as the LSNs of logs written before epochs (epoch 0). The LSNs a crash or log
damage lost are remembered as ranges (``EpochHistory.lost``); a bookmark in one of them, or above
anything issued, is refused (``Lsns.not_in_log``), so a client never resumes past changes the
server no longer has. Resuming a view (docs/protocol.md, Resuming a view) asks the same question.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson

from ..errors import BAD_MESSAGE, CommandError

# Imported when the module runs, not only for type checking: a dataclass's field types must exist
# when the compiled core creates the class (scripts/compile_core.py).
from ..fanout.subscription import Subscription
from ..records.version import RecordVersion


@dataclass(frozen=True, slots=True)
class Bookmark:
    live_only: bool = False
    after_lsn: int = 0
    since: float | None = None


def parse_bookmark(text: str) -> Bookmark:
    if text == "now":
        return Bookmark(live_only=True)
    if text.isascii() and text.isdigit():  # int() would also take other scripts' digits
        return Bookmark(after_lsn=int(text))
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise CommandError(
            BAD_MESSAGE, f"bm must be 0, now, a bookmark from a message or an ISO-8601 UTC time, not {text!r}"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return Bookmark(since=moment.timestamp())


@dataclass(slots=True)
class ReplayRequest:
    """A bookmark subscription waiting for the runtime to read the log back to it."""

    subscription: Subscription
    bookmark: Bookmark
    until_lsn: int  # the log position when it subscribed: live messages start after it
    cid: Any
    wants_completed: bool
    # The last version replayed of each record, for OOF bodies of replayed deletes.
    state: dict[str, RecordVersion] = field(default_factory=dict)


# -- epochs: LSNs that never repeat -------------------------------------------------------------

EPOCH_SHIFT = 40  # 2**40 changes per epoch; a run that uses them all claims the next epoch
EPOCH_SPAN = 1 << EPOCH_SHIFT
NO_EPOCHS = 1 << 63  # without a log (no durable topic) LSNs only have to be unique within the run


def epoch_of(lsn: int) -> int:
    return lsn >> EPOCH_SHIFT


Range = tuple[int, int]  # (lo, hi): the LSNs strictly between lo and hi


def add_lost(ranges: list[Range], lo: int, hi: int) -> list[Range]:
    """``ranges`` with ``(lo, hi)`` added, sorted, and touching or overlapping ranges merged."""
    merged: list[Range] = []
    for start, end in sorted([*ranges, (lo, hi)]):
        if merged and start < merged[-1][1]:  # (a, b) and (c, d) with c < b leave no LSN between
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


@dataclass(slots=True)
class EpochHistory:
    """What ``data_dir/epochs.json`` holds: the highest epoch claimed, and the LSN ranges that were
    handed out (or could have been) and are not in the log."""

    epoch: int = -1  # -1: none claimed yet (a new data directory, or a log from before epochs)
    lost: list[Range] = field(default_factory=list)

    def encode(self) -> bytes:
        return orjson.dumps({"format": 1, "epoch": self.epoch, "lost": self.lost})

    @classmethod
    def decode(cls, data: bytes) -> EpochHistory:
        """The history in ``data``; ValueError when it is not one."""
        try:
            document = orjson.loads(data)
            epoch, lost = document["epoch"], [(int(lo), int(hi)) for lo, hi in document["lost"]]
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as error:
            raise ValueError(f"not an epoch history: {error}") from None
        if document.get("format") != 1 or type(epoch) is not int:
            raise ValueError("not an epoch history of format 1")
        return cls(epoch, lost)

    def restart(self, recovered_lsn: int, damaged: list[tuple[int, int | None]]) -> EpochHistory:
        """The history after a start that recovered the log up to ``recovered_lsn``, lost the LSNs
        between each pair in ``damaged`` (``None``: to the end of the log), and claims the next epoch.
        Whatever the last run handed out above ``recovered_lsn`` never reached the disk: lost."""
        epoch = max(self.epoch, epoch_of(recovered_lsn)) + 1
        base = epoch << EPOCH_SHIFT
        lost = add_lost(self.lost, recovered_lsn, base)
        for lo, hi in damaged:
            lost = add_lost(lost, lo, base if hi is None else hi)
        return EpochHistory(epoch, lost)


class Lsns:
    """The LSN counter, and which bookmarks name a change the log holds or held."""

    def __init__(self) -> None:
        self.last = 0  # the highest LSN handed out (or the first of the epoch, minus one)
        self._limit = NO_EPOCHS  # the first LSN of the next epoch
        self.lost: list[Range] = []
        # Set by the runtime with the first epoch: persists the next epoch and returns it.
        self.claim_epoch: Callable[[], int] | None = None

    def next(self) -> int:
        lsn = self.last + 1
        if lsn >= self._limit:
            lsn = self._roll_over()
        self.last = lsn
        return lsn

    def restart(self, lsn: int) -> None:
        """After recovery: the next change is numbered after everything in the log (an epoch, when
        the runtime begins one, moves it further)."""
        self.last = max(self.last, lsn)

    def begin_epoch(self, epoch: int, lost: list[Range], claim: Callable[[], int]) -> None:
        self.last = epoch << EPOCH_SHIFT
        self._limit = self.last + EPOCH_SPAN
        self.lost = list(lost)
        self.claim_epoch = claim

    def _roll_over(self) -> int:
        # The next epoch is on disk before any LSN of it is handed out, or a crash could repeat it.
        if self.claim_epoch is None:
            raise RuntimeError("LSNs of this epoch are used up and no epoch can be claimed")
        self.begin_epoch(self.claim_epoch(), self.lost, self.claim_epoch)
        return self.last + 1

    def not_in_log(self, lsn: int) -> str | None:
        """Why a bookmark naming ``lsn`` cannot be read on from, or None when it can."""
        if lsn > self.last:
            return "this server has not issued it"
        index = bisect_left(self.lost, lsn, key=lambda lost: lost[0]) - 1
        if index >= 0 and lsn < self.lost[index][1]:
            return "the change it names was lost (a crash before it was written, or log damage)"
        return None


def check_bookmark(bookmark: Bookmark, not_in_log: Callable[[int], str | None]) -> None:
    """Refuse a bookmark that names no change the log holds (or held, before retention);
    ``not_in_log`` says why an LSN is not in it (``Lsns.not_in_log``, or a cluster's)."""
    if bookmark.live_only or bookmark.since is not None or bookmark.after_lsn == 0:
        return
    why = not_in_log(bookmark.after_lsn)
    if why is not None:
        raise CommandError(
            BAD_MESSAGE,
            f"bookmark {bookmark.after_lsn} is not in the log: {why}; "
            "subscribe again with bm 0, now or a time",
        )
