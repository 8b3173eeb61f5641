"""Bookmarks (PROTOCOL 6.4): where a bookmark subscription starts reading the transaction log.

``"0"`` reads from the start of the retained log, ``"now"`` reads nothing (live only), a bookmark
from an earlier message (its ``bm``, an LSN) reads what came after it, and an ISO-8601 UTC time
reads what was applied at or after it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from .errors import BAD_MESSAGE, CommandError

if TYPE_CHECKING:
    from .records import RecordVersion
    from .subscription import Subscription


@dataclass(frozen=True, slots=True)
class Bookmark:
    live_only: bool = False
    after_lsn: int = 0
    since: float | None = None


def parse_bookmark(text: str) -> Bookmark:
    if text == "now":
        return Bookmark(live_only=True)
    if text.isdigit():
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
