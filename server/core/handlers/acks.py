"""The acks a command earns (docs/protocol.md, Messages from the server): ``received`` once it is
read, ``processed`` once it is applied (or refused: ``failure`` with a reason), ``persisted`` once
its effect is in the log, ``stats`` with what it did. Every handler and both logs ack through here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import LOGON_REQUIRED, CommandError
from ..protocol import wire

if TYPE_CHECKING:
    from ..broker.broker import Broker
    from ..protocol.commands import Header
    from ..session.session import Session


def ack(session: Session, header: Header, kind: str, **fields: Any) -> None:
    session.send(wire.ack(kind, header.cid, **fields))


def received(session: Session, header: Header) -> None:
    if header.wants("received"):
        ack(session, header, "received")


def processed(session: Session, header: Header, **fields: Any) -> None:
    if header.wants_processed:
        ack(session, header, "processed", **fields)


def fail(session: Session, cid: Any, error: CommandError, seq: int | None = None) -> None:
    fields = {**error.fields} if seq is None else {**error.fields, "s": seq}  # s: which publish failed
    session.send(wire.ack("processed", cid, "failure", error.reason, **fields))


def check_logged_on(broker: Broker, session: Session) -> None:
    if broker.config.users is not None and not session.logged_on:
        raise CommandError(LOGON_REQUIRED, "send logon first")


def persisted_ack(
    broker: Broker,
    session: Session,
    header: Header,
    lsn: int,
    seq: int | None = None,
    reason: str | None = None,
) -> None:
    """The ``persisted`` ack of a command whose effect is in the log up to ``lsn``: now or when it is."""
    client_name = session.client_name if seq is not None else None
    if not broker.durability.wait(lsn, session, header.cid, client_name, seq, reason):
        fields: dict[str, Any] = {} if seq is None else {"s": seq}
        ack(session, header, "persisted", reason=reason, **fields)


def ack_applied(
    broker: Broker,
    session: Session,
    header: Header,
    seq: int | None,
    lsn: int | None,
    notice: dict[str, Any] | None = None,
    **fields: Any,
) -> None:
    """processed, persisted (now, or once the log is on disk up to ``lsn``), stats: what the
    command asked for. ``notice`` goes on the processed ack and on a persisted ack sent now (one
    that waits for the disk may be batched with other commands': docs/protocol.md, Durability)."""
    if seq is not None:
        fields["s"] = seq
    notice = notice or {}
    processed(session, header, **fields, **notice)
    if header.wants("persisted"):
        if lsn is None:
            ack(session, header, "persisted", **({"s": seq} if seq is not None else {}), **notice)
        else:
            persisted_ack(broker, session, header, lsn, seq)
    if header.wants("stats"):
        ack(session, header, "stats", **fields)


def ack_duplicate(broker: Broker, session: Session, header: Header, seq: int) -> None:
    received(session, header)
    if header.wants_processed:
        ack(session, header, "processed", reason="duplicate", s=seq)
    if header.wants("persisted"):
        persisted_ack(broker, session, header, broker.durability.last_lsn, seq, reason="duplicate")
