"""The log of a server alone: a change is numbered, applied and (on a durable topic) appended to
the transaction log as its command runs, and acked at once (``persisted`` once the log is on
disk: broker/durability.py).

It is one of the two implementations of the ``ChangeLog`` the commands propose their changes to
(broker/changelog.py); the other is a cluster's shared log in Redis (shared.py), which applies them when
the log brings them back. Either way the change is applied by ``applying.apply_change``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..broker.applying import apply_change, apply_transaction
from ..broker.changelog import PLAIN_STREAM, Proposal
from ..handlers.acks import ack_applied
from ..sow.txlog import SEQUENCE, TX, LogEntry

if TYPE_CHECKING:
    from ..broker.broker import Broker


class LocalLog:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker

    def check_available(self) -> None:
        """Always: the log is this process's own."""

    def propose(self, proposal: Proposal) -> None:
        broker = self.broker
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
            lsn = broker.lsns.next()
            broker.log(LogEntry(lsn, SEQUENCE, name, "", None, client, seq, broker.clock(), None))
        if seq is not None and client is not None:
            broker.accept_sequence(client, seq)  # a duplicate from now on
            if not (header.wants("persisted") and lsn is not None):
                # Persisted once the log is on disk up to here (otherwise the persisted ack's
                # waiter records it as persisted).
                last = lsn if lsn is not None else broker.durability.last_lsn
                broker.durability.wait(last, None, None, client, seq)
        ack_applied(broker, session, header, seq, lsn, **proposal.fields)

    def apply(self, name: str, entries: list[LogEntry]) -> tuple[bool, int | None]:
        """Number and apply ``entries``, changes to topic ``name``, and log them when the topic
        is durable: whether it is, and the LSN of the last entry logged (None: none was)."""
        broker = self.broker
        topic = broker.topics.get(name)  # None: a plain topic nobody listens to
        durable = topic is not None and topic.durable
        lsn = None
        for entry in entries:
            # Every change is numbered: a record version's number is its bookmark, and a
            # delete's orders it in the topic's history (resuming a view, PROTOCOL 11.1).
            entry.lsn = broker.lsns.next()
            if topic is not None:
                apply_change(topic, entry, broker.timers)
            if durable:
                broker.log(entry)
                lsn = entry.lsn
        return durable, lsn

    def _transaction(self, entry: LogEntry) -> int | None:
        """Apply a transaction; the LSN of its log entry, None when it changed no durable topic."""
        broker = self.broker
        entry.lsn = broker.lsns.next()
        topics = broker.topics
        apply_transaction(topics.get, entry, broker.timers, broker.tx_frames)
        durable = [change for change in entry.data if (t := topics.get(change[1])) is not None and t.durable]
        if not durable:
            return None
        broker.log(
            LogEntry(entry.lsn, TX, "", "", durable, entry.client_name, entry.seq, entry.timestamp, None)
        )
        return entry.lsn
