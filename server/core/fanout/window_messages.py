"""What a change means for a live window subscription (PROTOCOL 6.6): the changed record's
message and those about the records it pushed across the window's edges, in the order a client
with ``positions`` can apply them one at a time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from ..queue.delivery import OOF as OOF_KIND
from ..records.version import RecordVersion

if TYPE_CHECKING:
    from .bodies import Memo
    from .subscription import Change, Subscription

Item = TypeVar("Item", bound=tuple[Any, ...])  # (..., key, change)


def window_changes(
    sub: Subscription,
    key: str | None,
    old: RecordVersion | None,
    new: RecordVersion | None,
    memo: Memo,
    gone: str,
    records: Mapping[str, RecordVersion],
) -> list[tuple[str | None, Change]]:
    """For a window subscription: the message about the changed record, then those about the
    records it pushed out of the window or pulled into it (their current state, unchanged)."""
    assert sub.window is not None
    out: list[tuple[str | None, Change]] = []
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
    return in_position_order(sub, out)


def in_position_order(sub: Subscription, out: list[Item]) -> list[Item]:
    """With ``positions``, the OOFs first, then the rest by the position they carry, so a
    client that applies them in order (an entry at ``pos`` p moves the rows from p down, an
    OOF the rows below it up) ends with the window's order. Each item ends with a record's key
    and its change (what comes before them rides along)."""
    window = sub.window
    if not sub.positions or window is None or len(out) < 2:
        return out

    def place(item: Item) -> tuple[bool, int]:
        key, change = item[-2], item[-1]
        position = window.position(key) if key is not None else None
        return (change[0] != OOF_KIND, position or 0)

    return sorted(out, key=place)
