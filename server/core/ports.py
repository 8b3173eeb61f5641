"""The narrow interfaces the fan-out talks through, so that the topic never imports the session
and the pending run never imports the topic (imports point one way: session -> topic)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .delivery import Delivery, RunBatch


class Subscriber(Protocol):
    """What the fan-out needs of a socket's session: to queue a message, or a run of them."""

    def deliver(self, delivery: Delivery) -> None: ...

    def deliver_run(self, batch: RunBatch) -> None: ...


class PendingRun(Protocol):
    """What the fast lane's run needs of the topic whose deliveries are waiting in it."""

    def flush_run(self) -> None: ...

    def defers_to(self, subscriber: Subscriber) -> bool: ...
