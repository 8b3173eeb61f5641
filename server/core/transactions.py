"""``tx`` (PROTOCOL 11.3): several publishes, delta publishes and deletes applied as one step.

Every command is decided first, in order, each on the records as the commands before it left
them; the first one refused refuses the transaction (``<reason>: cmds[i]: ...``) and nothing is
applied. Then the transaction is one log entry with one LSN and the publisher sequence ``s``,
applied whole (``applying.apply_transaction``): its messages reach each socket in one block between
``tx_begin`` and ``tx_end`` (tx_frames.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .commands import Header, Publish, Transaction
from .errors import BAD_MESSAGE, CommandError
from .local_log import ack_duplicate
from .publishing import decide_delete, decide_publish
from .shared_log import Proposal
from .txlog import TX, Entry

if TYPE_CHECKING:
    from .engine import Engine
    from .session import Session


def transact(engine: Engine, session: Session, header: Header, body: Transaction, retries: int = 0) -> None:
    """``retries``: how often a cluster decided it again (replica.py)."""
    for index, command in enumerate(body.commands):
        try:
            engine.check_write(session, command.topic)
        except CommandError as error:
            raise CommandError(error.code, f"cmds[{index}]: {error.detail}") from None
    name, seq = session.client_name, body.seq
    if seq is not None and name is not None and seq <= engine.sequences.get(name, 0):
        ack_duplicate(engine, session, header, seq)
        return
    if engine.shared is not None:
        raise CommandError(BAD_MESSAGE, "transactions are not available in a cluster yet")
    engine.changes.check_available()
    pending: dict[tuple[str, str], Any] = {}
    changes: list[list[Any]] = []
    for index, command in enumerate(body.commands):
        try:
            if isinstance(command, Publish):
                entry, _ = decide_publish(engine, session, command, pending)
                decided = [entry]
            else:
                decided, _ = decide_delete(engine, session, command, pending)
        except CommandError as error:
            raise CommandError(error.code, f"cmds[{index}]: {error.detail}") from None
        for entry in decided:
            if entry.key:  # a record's change: the next commands see it
                pending[(entry.topic, entry.key)] = entry.data
            changes.append([entry.op, entry.topic, entry.key, entry.data, entry.expires_at])
    if not retries:
        engine.received(session, header)
    transaction = Entry(0, TX, "", "", changes, name, seq, engine.clock(), None)
    proposal = Proposal("", [transaction], [None], session, header, body, name, seq)
    proposal.retries = retries
    engine.changes.propose(proposal)
