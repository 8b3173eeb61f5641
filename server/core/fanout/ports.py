"""The narrow interfaces the fan-out talks through, so that imports point one way (session ->
topic -> subscription -> queue): the topic never imports the session, and the pending run never
imports the topic. What the queue needs of a subscription is the queue's own (queue/reader.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..queue.delivery import Delivery, QueuePolicy, RunBatch, TxBlock


class Subscriber(Protocol):
    """What the fan-out needs of a socket's session: to queue a message, a run of them, a
    transaction's messages whole, or the new sizes of views (option count)."""

    def deliver(self, delivery: Delivery) -> None: ...

    def deliver_run(self, batch: RunBatch) -> None: ...

    def deliver_tx(self, block: TxBlock) -> None: ...

    def count(self, policy: QueuePolicy, numbers: dict[Any, int]) -> None: ...


class PendingRun(Protocol):
    """What the fast lane's run needs of the topic whose deliveries are waiting in it."""

    def flush_run(self) -> None: ...

    def defers_to(self, subscriber: Subscriber) -> bool: ...


if TYPE_CHECKING:
    from ..records.version import RecordVersion


class Derived(Protocol):
    """A view derived from a topic's changes (an aggregation: aggregate/view.py), fed every change
    of the topic's records as it is applied (broker/applying.py) and flushed at the end of a
    transaction, so that a transaction changes what it derives once."""

    def source_changed(
        self, key: str, old: RecordVersion | None, new: RecordVersion | None, gone: str
    ) -> None: ...

    def flush(self) -> None: ...

    def change_cost(self) -> int:
        """What one change of the topic costs it, in the filter budget's units (session/quota.py)."""
        ...


class Prepared(Protocol):
    """What a pass in slices made for the command now running (handlers/preparing.py), held by
    its topic while that command runs: a snapshot's records (passes.py), or an aggregation's
    groups (aggregate/building.py). ``share``: which command's it is."""

    share: tuple[Any, ...]
