"""The change log's interface, and what travels through it.

Commands decide changes and propose them to the ``ChangeLog`` the broker was built with (the
composition root chooses it: server/runtime/hub.py): the log of a server alone (log/local.py),
which applies them at once, or a cluster's shared log in Redis (log/shared.py), which applies
them when the log brings them back in order (log/replica.py).

A stream entry's ID (``<ms>-<n>``) becomes the LSN of what it applies, and so its bookmark:
``ms << 20 | n``, one decimal integer that orders like the ID and names the same change on every
node.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

# Imported when the module runs, not only for type checking: a dataclass's field types must exist
# when the compiled core creates the class (scripts/compile_core.py).
from ..protocol.commands import Header, Logon, Publish, SowDelete, Transaction
from ..session.session import Session
from ..settings.config import UserConfig
from ..sow.txlog import LogEntry

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
    # Of the processed ack and of a persisted ack sent with it: a topic the server does not keep
    # (settings/unkept.py).
    notice: dict[str, Any] = field(default_factory=dict)
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
    one connection: docs/protocol.md, Cluster); the logon completes when Redis answers."""

    session: Session
    header: Header
    body: Logon
    user: UserConfig | None
    holder: str = ""  # "<node> <session id>": who holds the name once it is claimed


class ChangeLog(Protocol):
    """Where commands send the changes they decided (publishes, deletes, expiries), and what they
    ask of the log: the local log, which applies a change at once (log/local.py), or a cluster's
    shared log, which applies it when Redis has it in order (log/shared.py, log/replica.py).
    Whatever differs between a server alone and a cluster node is a method here, never a
    question of which log is in use."""

    @property
    def plain_lane(self) -> Callable[[LogEntry], None] | None:
        """How a decided plain publish (no cid, acks nor ``s``) is applied without a proposal,
        when this log applies a change at once and has nobody to answer (the engine's plain
        lane); None: it is proposed like any change."""

    def check_available(self) -> None:
        """Raise ``CommandError(unavailable)`` when no change can be taken now."""

    def propose(self, proposal: Proposal) -> None:
        """Append ``proposal``'s changes: applied and acked now, or when the log brings them back."""

    def log_position(self, topic: str) -> int:
        """The LSN up to which the changes of ``topic`` are in the log (a bookmark replay reads up
        to here, and live messages follow)."""

    def applied_position(self, topic: str) -> int:
        """The LSN up to which this server has applied the changes of ``topic``: a bookmark that
        resumes a view from here misses nothing (docs/protocol.md, Resuming a view)."""

    def now_position(self) -> int:
        """The LSN of the newest change this server has applied, of any topic: the bookmark a
        logon ack carries (a ``subscribe`` from it replays what changed after the logon)."""

    def not_in_log(self, topic: str, lsn: int) -> str | None:
        """Why a bookmark naming ``lsn`` of ``topic`` names no change the log holds, or None."""

    def transaction_stream(self, streams: list[str]) -> str:
        """The stream a transaction whose commands go to ``streams`` (one per command) is appended
        to; ``CommandError`` when the log cannot take them as one entry."""

    def claim_name(self, claim: NameClaim) -> bool:
        """Claim a logon's client name: True when the claim is on its way (the logon completes
        when it is answered: handlers/logons.py ``claimed``); False when the name is this
        server's to give, and the logon completes now."""

    def release_name(self, name: str, session: Session) -> None:
        """``session`` let go of client name ``name``."""

    def log_owner(self, name: str, user_id: str) -> None:
        """With ``[auth]``: client name ``name`` belongs to ``user_id`` from now on (docs/protocol.md,
        Who may connect); kept by the log, so a restart remembers it."""

    def begin_run(self) -> None:
        """After recovery, before the first connection."""
