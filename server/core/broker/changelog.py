"""The change log's interface, and what travels through it.

Commands decide changes and propose them to the ``ChangeLog`` the engine was built with: the log
of a server alone (log/local.py), which applies them at once, or a cluster's shared log in Redis
(log/shared.py), which applies them when the log brings them back in order (log/replica.py).

A stream entry's ID (``<ms>-<n>``) becomes the LSN of what it applies, and so its bookmark:
``ms << 20 | n``, one decimal integer that orders like the ID and names the same change on every
node.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..sow.txlog import LogEntry

if TYPE_CHECKING:
    from ..protocol.commands import Header, Logon, Publish, SowDelete, Transaction
    from ..session.session import Session
    from ..settings.config import UserConfig

SEQ_BITS = 20  # entries one stream takes within one millisecond: far more than Redis can append
PLAIN_STREAM = ""  # the one stream of every topic that is not configured (they have no SOW)
ABSENT = "-"  # an expectation: the record must not exist


def lsn_of(stream_id: str) -> int:
    """The LSN of a stream entry ID (``<ms>-<n>``)."""
    ms, _, n = stream_id.partition("-")
    return int(ms) << SEQ_BITS | int(n)


def stream_id(lsn: int) -> str:
    return f"{lsn >> SEQ_BITS}-{lsn & ((1 << SEQ_BITS) - 1)}"


@dataclass(slots=True)
class Proposal:
    """One command's changes to one topic, on their way through the shared log."""

    topic: str  # its stream: a configured topic's name, or PLAIN_STREAM
    entries: list[LogEntry]  # LSN 0: the stream numbers them
    expect: list[str | None]  # per entry: the version (stream ID) it was decided against, ABSENT, or None
    session: Session | None = None  # None: an expiry, which nobody waits for
    header: Header | None = None
    body: Publish | SowDelete | Transaction | None = None  # what to decide again after a conflict
    client_name: str | None = None
    seq: int | None = None
    fields: dict[str, Any] = field(default_factory=dict)  # of the processed ack (sow_delete counts)
    token: int = 0
    retries: int = 0
    waiting: int = 0  # entries appended and not yet applied here
    # Decided against a record version (it may be decided again, after later changes).
    guarded: bool = False

    def __post_init__(self) -> None:
        self.guarded = self.expect.count(None) != len(self.expect)  # some entry names a version


@dataclass(slots=True)
class NameClaim:
    """A logon's client name, on its way to becoming this socket's in the whole cluster (one name,
    one connection: PROTOCOL 10); the logon completes when Redis answers."""

    session: Session
    header: Header
    body: Logon
    user: UserConfig | None
    holder: str = ""  # "<node> <session id>": who holds the name once it is claimed


class ChangeLog(Protocol):
    """Where commands send the changes they decided (publishes, deletes, expiries): the local
    log, which applies them at once (log/local.py), or a cluster's shared log, which applies them
    when Redis has them in order (log/shared.py, log/replica.py)."""

    def check_available(self) -> None:
        """Raise ``CommandError(unavailable)`` when no change can be taken now."""

    def propose(self, proposal: Proposal) -> None: ...
