"""A configured topic's stream read as a chain: every entry the cluster's script appends names the
entry before it (field ``p``, redis_script.py), so a reader knows, entry by entry, that it missed
none.

Entries go missing only by a trim (redis_snapshots.py). A node that was stopped, cut off or slow
for longer than ``retention`` reads on from its position, and Redis answers with what follows that
position *now*: the trimmed entries left out, without a word. Looking at the trim record now and
then does not catch it: once the node has applied the stream's tail, its position is past the
cut. So an entry whose predecessor is not the position the node has applied up to is not applied:
the topic is resynchronised from its snapshot first (redis_log.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import orjson

from ..core.broker.changelog import lsn_of
from ..core.sow.txlog import LogEntry

StreamBatch = list[tuple[bytes, dict[bytes, bytes]]]  # what XRANGE and XREAD answer per stream


@dataclass(slots=True, frozen=True)
class StreamEntry:
    entry: LogEntry  # numbered by its stream ID
    origin: str  # the node and token of the proposal it came from
    # The LSN of the entry before it in the stream; None when there was none (the first entry of
    # a stream, or of one re-seeded empty) or the entry does not say (written by older nodes).
    prev: int | None

    def follows(self, position: int) -> bool:
        """Whether this entry comes right after ``position``: nothing between them went missing."""
        return self.prev is None or self.prev == position


def numbered(batch: StreamBatch) -> list[StreamEntry]:
    """The entries of a batch read from a stream, each numbered by its ID."""
    out = []
    for entry_id, fields in batch:
        entry = LogEntry.from_payload(orjson.loads(fields[b"e"]))
        entry.lsn = lsn_of(entry_id.decode())
        prev = fields.get(b"p")
        out.append(StreamEntry(entry, fields[b"o"].decode(), lsn_of(prev.decode()) if prev else None))
    return out
