"""The ``unsubscribe`` policy at a full queue's relief (docs/protocol.md, Conflation): which subscriptions go.

A subscription of an ``unsubscribe`` topic with a message queued is dropped whole, found first:
a transaction queued anywhere (a block, or merged ones) then keeps none of its messages, since
its delta about a record may follow their dropped insert of it. Those messages inside
transactions are counted as dropped here; the others as the relief drops them (outbox.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from .delivery import Delivery, RunBatch, TxBlock
from .tx_merge import TxMerge, held

if TYPE_CHECKING:
    from .reader import Reader


def dropped_by_relief(entries: Iterable[object]) -> dict[Reader, None]:
    """The subscriptions with messages among a queue's ``entries`` whose topic's policy is
    ``unsubscribe`` (an ordered set)."""
    dropped: dict[Reader, None] = {}
    for entry in entries:
        in_block = isinstance(entry, (TxBlock, TxMerge))
        for item in held(entry) if isinstance(entry, (TxBlock, TxMerge)) else (entry,):
            if isinstance(item, (Delivery, RunBatch)) and item.policy.conflation == "unsubscribe":
                dropped.update(dict.fromkeys(item.subs))
                if in_block:
                    item.policy.counters["dropped"] += 1 if isinstance(item, Delivery) else len(item.bodies)
    return dropped
