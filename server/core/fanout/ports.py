"""The narrow interfaces the fan-out and the queue talk through, so that imports point one way
(session -> topic -> subscription -> queue): the topic never imports the session, the pending
run never imports the topic, and the queue never imports the subscription."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..filters.entitlement import Entitlement
    from ..log.shared import Proposal
    from ..queue.delivery import Delivery, RunBatch
    from ..records.version import RecordVersion


class ChangeLog(Protocol):
    """Where commands send the changes they decided (publishes, deletes, expiries): the local
    log, which applies them at once (log/local.py), or a cluster's shared log, which applies them
    when Redis has them in order (log/shared.py, log/replica.py)."""

    def check_available(self) -> None:
        """Raise ``CommandError(unavailable)`` when no change can be taken now."""

    def propose(self, proposal: Proposal) -> None: ...


class Subscriber(Protocol):
    """What the fan-out needs of a socket's session: to queue a message, or a run of them."""

    def deliver(self, delivery: Delivery) -> None: ...

    def deliver_run(self, batch: RunBatch) -> None: ...


class PendingRun(Protocol):
    """What the fast lane's run needs of the topic whose deliveries are waiting in it."""

    def flush_run(self) -> None: ...

    def defers_to(self, subscriber: Subscriber) -> bool: ...


class Reader(Protocol):
    """What a socket queue needs of a subscription to render its conflated messages (through
    the subscription's own renderer) and to leave out one dropped for back pressure."""

    sub_id: Any
    order: int
    heads: dict[bytes, bytes]
    dropped: bool
    held: dict[str, Any] | None
    entitlement: Entitlement

    @property
    def positions(self) -> bool: ...

    def view_of(self, version: RecordVersion) -> Any: ...

    def full_body(
        self, key: str | None, version: RecordVersion, view: Any, memo: dict[Any, Any]
    ) -> bytes: ...

    def body_of(self, key: str | None, version: RecordVersion) -> bytes: ...

    def composite_body(self, key: str, base: Any, version: RecordVersion, view: Any) -> bytes: ...
