"""What a socket queue needs of a subscription: the queue's own narrow interface, so the queue
never imports the fan-out, and its merge table is tested with a small fake (tests/core/queue)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

# Imported when the module runs, not only for type checking: a dataclass's field types must exist
# when the compiled core creates the class (scripts/compile_core.py).
from ..filters.entitlement import Entitlement

if TYPE_CHECKING:
    from ..records.version import RecordVersion


class Reader(Protocol):
    """What a socket queue needs of a subscription to render its conflated messages (through
    the subscription's own renderer) and to leave out one dropped for back pressure."""

    sub_id: Any
    order: int
    head_p: bytes  # the head of a ``p`` message naming it alone
    dropped: bool
    # What the subscriber holds, SowKey -> view, from which the fan-out computes its next message
    # about the record (None: it holds nothing, a stateless subscription). The queue replaces a
    # view here, the moment a conflation_merge decides the client will hold another state than
    # the one the fan-out made (conflation.py's ``Net.sends``).
    held: dict[str, Any] | None
    entitlement: Entitlement
    # The count message (counts.py) this subscription's latest number waits in, or None.
    count_queued: Any

    @property
    def positions(self) -> bool: ...

    @property
    def successor(self) -> Reader | None:
        """The subscription that took over this one's ``sub_id`` by ``replace`` (and a copy of
        what this one held), or None."""

    def message_head(self, command: bytes) -> bytes: ...

    def view_of(self, version: RecordVersion) -> Any: ...

    def full_body(
        self, key: str | None, version: RecordVersion, view: Any, memo: dict[Any, Any]
    ) -> bytes: ...

    def body_of(self, key: str | None, version: RecordVersion) -> bytes: ...

    def composite_body(self, key: str, base: Any, version: RecordVersion, view: Any) -> bytes: ...
