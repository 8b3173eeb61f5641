"""``tx`` (docs/protocol.md, Transactions): several publishes, delta publishes and deletes applied
as one step.

Every command is decided first, in order, each on the records as the commands before it left them;
the first one refused refuses the transaction (``<reason>: cmds[i]: ...``) and nothing is applied.
Its deletes by filter over a big topic read, in that step, only the records a pass in slices found
before it that their filters may delete (preparing_tx.py). Then the transaction is one log entry
with one LSN and the publisher sequence ``s``, applied whole (``applying.apply_transaction``): its
messages reach each socket in one block between ``tx_begin`` and ``tx_end`` (fanout/tx_frames.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..broker.changelog import PLAIN_STREAM, Proposal
from ..errors import CommandError
from ..protocol.commands import Header, Publish, Transaction
from ..session.tx_work import TransactionWork, over_budget
from ..sow.txlog import TX, LogEntry
from .acks import ack_duplicate, received
from .preparing_tx import take_candidates
from .publishing import decide_delete, decide_publish, is_duplicate

if TYPE_CHECKING:
    from ..broker.broker import Broker
    from ..session.session import Session

# What plain pub/sub meant for a transaction's changes to a topic the server does not keep.
PLAIN_TRANSACTION = (
    "the transaction's publishes to it reached only its live subscribers, and nothing is stored"
)


def transact(broker: Broker, session: Session, header: Header, body: Transaction, retries: int = 0) -> None:
    """``retries``: how often a cluster decided it again (log/replica.py)."""
    for index, command in enumerate(body.commands):
        try:
            session.check_write(command.topic)
        except CommandError as error:
            raise CommandError(error.code, f"cmds[{index}]: {error.detail}", error.fields) from None
    name, seq = session.client_name, body.seq
    if seq is not None and is_duplicate(broker, session, seq):
        ack_duplicate(broker, session, header, seq)
        return
    # One entry of one stream: a cluster's commands must share a topic (the local log has one).
    stream = broker.changes.transaction_stream(_streams(broker, body))
    broker.changes.check_available()
    pending: dict[tuple[str, str], Any] = {}
    expects: dict[str, str] = {}  # per record: the version its first change was decided against
    changes: list[list[Any]] = []
    work = TransactionWork()
    # The records its deletes by filter may delete, per topic, where a pass in slices found them
    # before this step (preparing_tx.py): they read those, not the topic.
    # (Charged as if they read the topic: a transaction's verdict is the same found either way.)
    candidates = take_candidates(broker, session, body)
    doomed_at = TransactionWork.doomed_at(body.commands, broker.topics)
    for index, command in enumerate(body.commands):
        try:
            if index == doomed_at:
                raise over_budget()
            work.charge(command, broker.topics.get(command.topic), len(pending))
            if isinstance(command, Publish):
                entry, expect = decide_publish(broker, session, command, pending)
                decided, expected = [entry], [expect]
            else:  # (a doomed transaction's deletes are checked, never passed over the topic)
                found = candidates.get(command.topic)
                decided, expected = decide_delete(
                    broker, session, command, pending, doomed_at is not None, found
                )
            work.changed(broker.topics.get(command.topic), len(decided))
        except CommandError as error:
            raise CommandError(error.code, f"cmds[{index}]: {error.detail}", error.fields) from None
        for entry, expect in zip(decided, expected, strict=True):
            if entry.key:  # a record's change: the next commands see it
                if expect is not None and (entry.topic, entry.key) not in pending:
                    expects[entry.key] = expect
                pending[(entry.topic, entry.key)] = entry.data
            changes.append([entry.op, entry.topic, entry.key, entry.data, entry.expires_at])
    if not retries:
        received(session, header)
    # In a cluster the script reads, as the entry's key and expectation, the records it writes
    # (p) or deletes (d) and the versions it was decided against (redis_script.py).
    written = "\n".join(("d" if data is None else "p") + key for (_, key), data in pending.items())
    guard = "\n".join(f"{key}={version}" for key, version in expects.items()) or None
    transaction = LogEntry(0, TX, "", written if stream else "", changes, name, seq, broker.now(), None)
    proposal = Proposal(stream, [transaction], [guard], session, header, body, name, seq)
    proposal.retries = retries
    if header.wants_processed or header.wants("persisted"):
        # Its first topic the server does not keep, if any, is said as a publish's is.
        unkept = next(filter(None, (broker.kept.unkept(command.topic) for command in body.commands)), None)
        if unkept is not None:
            proposal.notice = unkept.warning(PLAIN_TRANSACTION)
    broker.changes.propose(proposal)


def _streams(broker: Broker, body: Transaction) -> list[str]:
    """The stream each command's changes would go to (a configured topic's, or the plain one)."""
    streams = []
    for command in body.commands:
        topic = broker.topics.get(command.topic)
        streams.append(topic.name if topic is not None and topic.is_sow else PLAIN_STREAM)
    return streams
