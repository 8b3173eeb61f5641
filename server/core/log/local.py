"""The log of a server alone: a change is numbered, applied and (on a durable topic) appended to
the transaction log as its command runs, and acked at once (``persisted`` once the log is on
disk: broker/durability.py).

It is one of the two implementations of the ``ChangeLog`` the commands propose their changes to
(broker/changelog.py); the other is a cluster's shared log in Redis (shared.py), which applies
them when the log brings them back. Either way the change is applied by
``applying.apply_change``. Its positions are the LSNs this process hands out (broker/bookmarks.py),
and client names are this server's own to give.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..broker.applying import apply_change, apply_transaction
from ..broker.changelog import PLAIN_STREAM, NameClaim, Proposal
from ..handlers.acks import ack_applied
from ..sow.txlog import OWNER, SEQUENCE, TX, LogEntry

if TYPE_CHECKING:
    from ..broker.broker import Broker
    from ..session.session import Session


class LocalLog:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker

    @property
    def plain_lane(self) -> Callable[[LogEntry], None] | None:
        return self._apply_plain  # a change is applied as it is proposed: nothing to propose

    def _apply_plain(self, entry: LogEntry) -> None:
        self.apply(entry.topic, [entry])

    def check_available(self) -> None:
        """Always: the log is this process's own."""

    def log_position(self, topic: str) -> int:
        return self.broker.durability.last_lsn

    def applied_position(self, topic: str) -> int:
        return self.broker.lsns.last

    def now_position(self) -> int:
        return self.broker.lsns.last

    def not_in_log(self, topic: str, lsn: int) -> str | None:
        return self.broker.lsns.not_in_log(lsn)

    def transaction_stream(self, streams: list[str]) -> str:
        """A transaction is one entry of the one log, whichever topics it changes."""
        return PLAIN_STREAM

    def claim_name(self, claim: NameClaim) -> bool:
        return False  # one server: the logon has checked the name, and gives it

    def release_name(self, name: str, session: Session) -> None:
        """Nothing to tell anyone: ``client_names`` is the only record of who holds it."""

    def log_owner(self, name: str, user_id: str) -> None:
        broker = self.broker
        if any(topic.durable for topic in broker.config.topics):
            # Logged like a sequence, and before any sequence of the name: whatever a restart
            # remembers of the name's publishes, it remembers whose name it is.
            owner = LogEntry(broker.lsns.next(), OWNER, "", "", user_id, name, None, broker.clock(), None)
            broker.log(owner)

    def begin_run(self) -> None:
        """Without a transaction log, LSNs start at this run's start time (in the cluster's form,
        ms << 20), so a bookmark of an earlier run never names a change of this one; the resume
        histories that recovery did not restore start here."""
        broker = self.broker
        lsns = broker.lsns
        if lsns.claim_epoch is None:
            lsns.restart(int(broker.clock() * 1000) << 20)
        for topic in broker.topics.values():
            history = topic.sow.history
            if history is not None and not topic.durable:
                history.floor = max(history.floor, lsns.last)

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
        ack_applied(broker, session, header, seq, lsn, proposal.notice, **proposal.fields)

    def apply(self, name: str, entries: list[LogEntry]) -> tuple[bool, int | None]:
        """Number and apply ``entries``, changes to topic ``name``, and log them when the topic
        is durable: whether it is, and the LSN of the last entry logged (None: none was)."""
        broker = self.broker
        topic = broker.topics.get(name)  # None: a plain topic nobody listens to
        durable = topic is not None and topic.durable
        lsn = None
        for entry in entries:
            # Every change is numbered: a record version's number is its bookmark, and a
            # delete's orders it in the topic's history (resuming a view, docs/protocol.md, Resuming a view).
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
