"""Delivering a transaction whole (docs/protocol.md, Transactions): while one is applied, every message its
changes cause for a socket is held, and when it ends each socket that got any is queued one
``TxBlock``: ``tx_begin``, the messages in the order of the transaction's commands, ``tx_end``,
written in one frame and never split (merged with later ones only whole: queue/tx_merge.py).

One instance is shared by the broker and its sessions, as the fan-out run is (run.py): a
session's ``deliver`` and ``deliver_run`` hand it their messages while a transaction is open.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ..protocol import wire
from ..queue.delivery import Delivery, RunBatch, TxBlock
from .run import FanOutRun

if TYPE_CHECKING:
    from .ports import Derived, Subscriber
    from .subscription import Owed, Subscription

# What one subscription's ended interval releases: its changes, and the transaction they
# complete (None: none).
Released = tuple["Subscription", list["Owed"], str | None]


class TxFrames:
    __slots__ = ("_held", "_last", "_run", "now", "tx")

    def __init__(self, run: FanOutRun, now: Callable[[], float]) -> None:
        self._run = run
        self.now = now  # the time of the unit of work under way (Broker.now)
        self.tx: str | None = None  # the open transaction's ID (its LSN), None: none is open
        self._held: dict[Subscriber, list[Delivery | RunBatch]] = {}
        self._last: dict[Subscriber, list[Delivery]] = {}  # count messages: after the changes

    def begin(self, tx: str) -> None:
        # What was decided before the transaction goes before it, derived views' changes too.
        self._run.derive()
        self._run.flush()
        self.tx = tx

    @contextmanager
    def whole(self, tx: str | None) -> Iterator[None]:
        """Around delivering what a conflation interval held: when it completes transaction
        ``tx``, its messages go as that transaction's block."""
        if tx is None or self.tx is not None:
            yield
            return
        self.begin(tx)
        try:
            yield
        finally:
            self.end()

    def release(self, released: list[Released]) -> None:
        """Deliver what subscriptions' intervals released together. What completes transactions
        goes to each socket as one block, however many of its subscriptions held it and whichever
        transactions each held (two that share a key are one block already: intervals.py), with
        the latest ID, in the order the changes arrived; the rest goes as it is."""
        blocks: dict[Subscriber, list[Released]] = {}
        for item in released:
            subscription, changes, tx = item
            if tx is None:
                self._deliver(subscription, changes)
            else:
                blocks.setdefault(subscription.session, []).append(item)
        for items in blocks.values():
            latest = max((tx for _, _, tx in items if tx is not None), key=int)
            # Each subscription's changes keep their order (a window's is by position).
            streams = [[(*owed, sub) for owed in changes] for sub, changes, _ in items]
            with self.whole(latest):
                for _, key, change, sub in heapq.merge(*streams, key=lambda owed: owed[0]):
                    sub.topic_ref.deliver(sub.session, (sub,), key, change)
        for subscription, _, _ in released:  # option count: the number goes with what was released
            subscription.topic_ref.counting.settle((subscription,))

    @staticmethod
    def _deliver(subscription: Subscription, changes: list[Owed]) -> None:
        topic = subscription.topic_ref
        for _, key, change in changes:
            topic.deliver(subscription.session, (subscription,), key, change)

    def derived(self, view: Derived) -> None:
        """``view`` has changes to write: at the end of the transaction or of the unit of work."""
        self._run.changed(view)

    def hold(self, session: Subscriber, item: Delivery | RunBatch) -> None:
        self._held.setdefault(session, []).append(item)

    def hold_last(self, session: Subscriber, item: Delivery) -> None:
        """Hold ``item`` for the end of the block (a count message: it counts every change)."""
        self._last.setdefault(session, []).append(item)

    def end(self) -> None:
        """Queue each socket's messages of the transaction as one block."""
        # Derived views change once, in the block (each group once, however many of the
        # transaction's records it holds); the fast lane's messages are in the block too.
        self._run.derive()
        self._run.flush()
        held, self._held = self._held, {}
        for session, last in self._last.items():
            held.setdefault(session, []).extend(last)
        self._last = {}
        tx, self.tx = self.tx, None
        if not held:
            return
        begin = wire.dumps({"c": "tx_begin", "tx": tx})
        end = wire.dumps({"c": "tx_end", "tx": tx})
        for session, items in held.items():
            session.deliver_tx(TxBlock(begin, items, end))
