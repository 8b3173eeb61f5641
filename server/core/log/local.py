"""The log of a server alone: a change is numbered, applied and (on a durable topic) appended to
the transaction log as its command runs, and acked at once (``persisted`` once the log is on
disk: broker/durability.py).

It is one of the two implementations of the ``ChangeLog`` the commands propose their changes to
(fanout/ports.py); the other is a cluster's shared log in Redis (shared.py), which applies them when
the log brings them back. Either way the change is applied by ``applying.apply_change``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..broker.applying import apply_change, apply_transaction
from ..broker.changelog import PLAIN_STREAM, Proposal
from ..sow.txlog import SEQUENCE, TX, LogEntry

if TYPE_CHECKING:
    from ..engine import Engine
    from ..protocol.commands import Header
    from ..session.session import Session


class LocalLog:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def check_available(self) -> None:
        """Always: the log is this process's own."""

    def propose(self, proposal: Proposal) -> None:
        engine = self.engine
        if proposal.entries and proposal.entries[0].op == TX:
            name, lsn = "", self._transaction(proposal.entries[0])
            durable = lsn is not None
        else:
            name = proposal.topic if proposal.topic != PLAIN_STREAM else proposal.entries[0].topic
            durable, lsn = self.apply(name, proposal.entries)
        session, header, seq = proposal.session, proposal.header, proposal.seq
        if session is None or header is None:
            return  # an expiry: nobody waits for it
        client = session.client_name
        if durable and lsn is None and seq is not None and client is not None:
            # A durable command that changed nothing still logs its sequence (a restart remembers it).
            lsn = engine.next_apply_seq()
            engine.log(LogEntry(lsn, SEQUENCE, name, "", None, client, seq, engine.clock(), None))
        if seq is not None and client is not None:
            if header.wants("persisted") and lsn is not None:
                engine.sequences[client] = seq  # the persisted ack's waiter records it as persisted
            else:
                accept_sequence(engine, session, seq, lsn if lsn is not None else engine.durability.last_lsn)
        ack_applied(engine, session, header, seq, lsn, **proposal.fields)

    def apply(self, name: str, entries: list[LogEntry]) -> tuple[bool, int | None]:
        """Number and apply ``entries``, changes to topic ``name``, and log them when the topic
        is durable: whether it is, and the LSN of the last entry logged (None: none was)."""
        engine = self.engine
        topic = engine.topics.get(name)  # None: a plain topic nobody listens to
        durable = topic is not None and topic.durable
        lsn = None
        for entry in entries:
            # Every change is numbered: a record version's number is its bookmark, and a
            # delete's orders it in the topic's history (resuming a view, PROTOCOL 11.1).
            entry.lsn = engine.next_apply_seq()
            if topic is not None:
                apply_change(topic, entry, engine.timers)
            if durable:
                engine.log(entry)
                lsn = entry.lsn
        return durable, lsn

    def _transaction(self, entry: LogEntry) -> int | None:
        """Apply a transaction; the LSN of its log entry, None when it changed no durable topic."""
        engine = self.engine
        entry.lsn = engine.next_apply_seq()
        apply_transaction(engine.topics.get, entry, engine.timers, engine.tx_frames)
        topics = engine.topics
        durable = [change for change in entry.data if (t := topics.get(change[1])) is not None and t.durable]
        if not durable:
            return None
        engine.log(
            LogEntry(entry.lsn, TX, "", "", durable, entry.client_name, entry.seq, entry.timestamp, None)
        )
        return entry.lsn


def accept_sequence(engine: Engine, session: Session, seq: int, lsn: int) -> None:
    """Remember ``seq`` now (deduplication) and as persisted once the log is on disk up to ``lsn``."""
    name = session.client_name
    if name is not None:
        engine.sequences[name] = seq
        engine.durability.wait(lsn, None, None, name, seq)


def ack_applied(
    engine: Engine, session: Session, header: Header, seq: int | None, lsn: int | None, **fields: Any
) -> None:
    """processed, persisted (now, or once the log is on disk up to ``lsn``), stats: what the
    command asked for."""
    if seq is not None:
        fields["s"] = seq
    engine.processed(session, header, **fields)
    if header.wants("persisted"):
        if lsn is None:
            engine.ack(session, header, "persisted", **({"s": seq} if seq is not None else {}))
        else:
            engine.persisted_ack(session, header, lsn, seq)
    if header.wants("stats"):
        engine.ack(session, header, "stats", **fields)


def ack_duplicate(engine: Engine, session: Session, header: Header, seq: int) -> None:
    engine.received(session, header)
    if header.wants_processed:
        engine.ack(session, header, "processed", reason="duplicate", s=seq)
    if header.wants("persisted"):
        engine.persisted_ack(session, header, engine.durability.last_lsn, seq, reason="duplicate")
