"""The protocol engine: commands in, queued messages out, no I/O and no clock of its own.

The runtime feeds it every frame a socket receives (``receive``) and drains each session's
outbox. The engine decodes a frame and dispatches each command to its handler (core/handlers),
which works on the broker's state (core/broker/broker.py). All state changes happen
synchronously inside ``receive`` on the caller's thread, so a snapshot taken inside one command
is atomic with respect to every publish.
"""

from __future__ import annotations

import logging
from typing import Any, assert_never

import orjson

from .broker.broker import Broker, Clock, LogFactory
from .errors import BAD_MESSAGE, CommandError
from .handlers import logons, publishing, querying, reentitle, transactions, visibility
from .handlers.acks import check_logged_on, fail, persisted_ack, processed, received
from .handlers.preparation import Preparation
from .handlers.preparing import prepare
from .protocol import inbound, wire
from .protocol.commands import (
    Body,
    Header,
    Logon,
    Publish,
    Query,
    Simple,
    SowDelete,
    Transaction,
    Unsubscribe,
    Visibility,
    decode_body,
    decode_header,
    plain_publish,
    valid_cid,
)
from .session.session import Session
from .settings.config import Config, UserConfig

log = logging.getLogger("server.engine")


def _sequence_of(raw: Any) -> int | None:
    seq = raw.get("s") if isinstance(raw, dict) else None
    return seq if type(seq) is int else None


class Engine:
    def __init__(self, config: Config, clock: Clock, log: LogFactory) -> None:
        """``log`` builds the change log the broker's commands propose to (the composition root
        chooses it: ``LocalLog``, or a cluster's ``SharedLog`` built before)."""
        self.broker = Broker(config, clock, log)
        self._plain_lane = self.broker.changes.plain_lane  # the log is the broker's for good

    def reload_auth(self, users: dict[str, UserConfig] | None) -> reentitle.Reentitled:
        """``[auth]`` was reloaded (docs/protocol.md, Reloading entitlements): every socket and
        subscription is re-decided now."""
        broker = self.broker
        broker.run.derive()  # the aggregations' groups are up to date before they move
        previous = broker.reload_users(users)
        done = reentitle.reentitle(broker, previous)
        broker.settle()
        return done

    # -- commands ---------------------------------------------------------------------------

    def decode(self, session: Session, frame: bytes | str) -> list[Any]:
        """The commands of one inbound frame, in order (a failure ack, and none, when it is not JSON)."""
        self.broker.begin_unit()  # a new unit of work: its own time
        try:
            decoded = inbound.loads(frame)  # orjson, refusing integers it would alter
        except orjson.JSONDecodeError as error:
            fail(session, None, CommandError(BAD_MESSAGE, f"not JSON ({error.msg})"))
            return []
        return decoded if isinstance(decoded, list) else [decoded]

    def receive(self, session: Session, frame: bytes | str) -> None:
        """Process one inbound frame whole: a command object or an array of them, each acked on
        its own. (The runtime executes a big frame in slices instead, so other sockets run between
        them: runtime/connection.py.)"""
        try:
            for raw in self.decode(session, frame):
                if session.close_code is not None:
                    return
                self.execute(session, raw)
        finally:
            self.broker.settle()

    def prepare(self, session: Session, raw: Any) -> Preparation | None:
        """The pass over a topic that decoded command ``raw`` would make in one step, to be read
        in slices before it runs (handlers/preparing.py), or None: it runs at once."""
        return prepare(self.broker, session, raw)

    def execute(self, session: Session, raw: Any, prepared: Preparation | None = None) -> None:
        """Process one decoded command (the broker's ``settle`` ends a run of them); ``prepared``:
        its pass, read in slices (``prepare``), whose end is now."""
        if prepared is None:
            self._execute(session, raw)
            return
        try:
            try:
                prepared.install()
            except Exception:  # a defect: the command runs whole, as if it had not been prepared
                log.exception("finishing a pass in slices failed on session %s: %.200r", session.id, raw)
                prepared.release()
            self._execute(session, raw)
        finally:
            prepared.release()

    def _execute(self, session: Session, raw: Any) -> None:
        broker = self.broker
        cid = valid_cid(raw)
        try:
            if type(raw) is inbound.RefusedCommand:
                raise raw.error  # the frame reader could not read it exactly (protocol/inbound.py)
            lane = self._plain_lane
            if lane is not None and (plain := plain_publish(raw)) is not None:
                publishing.publish_plain(broker, session, plain, lane)  # a feed's, alone: no acks
            else:
                header = decode_header(raw)
                cid = header.cid
                body = decode_body(header, raw)
                self.dispatch(session, header, body)
        except CommandError as error:
            fail(session, cid, error, _sequence_of(raw))
        except Exception:
            log.exception("command failed unexpectedly on session %s: %.200r", session.id, raw)
            failure = CommandError(BAD_MESSAGE, "the server could not process this command")
            fail(session, cid, failure, _sequence_of(raw))
        broker.commands_processed += 1

    def dispatch(self, session: Session, header: Header, body: Body) -> None:
        """Hand a decoded command to its handler (every command type has one: mypy checks)."""
        broker = self.broker
        if isinstance(body, Logon):
            logons.logon(broker, session, header, body)
            return
        check_logged_on(broker, session)
        if not isinstance(body, (Publish, SowDelete)):
            # What reads views sees the changes of the commands before it: the aggregations'
            # groups are written (changes wait for the end of the frame: fanout/run.py).
            broker.run.derive()
        if isinstance(body, Publish):
            publishing.publish(broker, session, header, body)
        elif isinstance(body, SowDelete):
            publishing.sow_delete(broker, session, header, body)
        elif isinstance(body, Query):
            querying.query(broker, session, header, body)
        elif isinstance(body, Unsubscribe):
            querying.unsubscribe(broker, session, header, body)
        elif isinstance(body, Transaction):
            transactions.transact(broker, session, header, body)
        elif isinstance(body, Visibility):
            visibility.set_visibility(broker, session, header, body)
        elif isinstance(body, Simple):
            received(session, header)
            if header.c == "heartbeat":
                session.send(wire.HEARTBEAT)
            processed(session, header)
            if header.wants("persisted"):  # flush: every earlier command's effect on disk
                persisted_ack(broker, session, header, broker.durability.last_lsn)
        else:
            assert_never(body)
