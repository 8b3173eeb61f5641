"""What a change means for a live window subscription (docs/protocol.md, Live windows): the changed record's
message and those about the records it pushed across the window's edges, in the order a client
with ``positions`` can apply them one at a time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..records.version import RecordVersion
from .windows import in_position_order

if TYPE_CHECKING:
    from .bodies import Memo
    from .subscription import Message, Subscription


def window_changes(
    sub: Subscription,
    key: str | None,
    old: RecordVersion | None,
    new: RecordVersion | None,
    memo: Memo,
    gone: str,
    records: Mapping[str, RecordVersion],
) -> list[tuple[str | None, Message]]:
    """For a window subscription: the message about the changed record, then those about the
    records it pushed out of the window or pulled into it (their current state, unchanged)."""
    assert sub.window is not None
    out: list[tuple[str | None, Message]] = []
    change = sub.on_change(key, old, new, memo, gone)
    if change is not None:
        out.append((key, change))
    entered, left = sub.window.crossings()
    for edge in (*entered, *left):
        version = records[edge]
        # A memo of their own: memo bodies are good for one record's change only.
        edge_memo: Memo = memo.setdefault(("edge", edge), {})
        change = sub.on_change(edge, version, version, edge_memo)
        if change is not None:
            out.append((edge, change))
    return in_position_order(sub.window, sub.positions, out)
