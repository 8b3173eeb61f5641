"""The protocol engine: commands in, queued messages out, no I/O and no clock of its own.

The runtime feeds it every frame a socket receives (``receive``) and drains each session's
outbox. All state changes happen synchronously inside ``receive`` on the caller's thread, so
a snapshot taken inside one command is atomic with respect to every publish.
"""

from __future__ import annotations

import itertools
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import orjson

from .broker.bookmarks import Lsns, ReplayRequest
from .broker.changelog import ChangeLog, Proposal, stream_id
from .broker.durability import Durability
from .broker.timers import Timers
from .errors import BAD_MESSAGE, LOGON_REQUIRED, CommandError
from .fanout.run import FanOutRun
from .fanout.subscription import Subscription
from .fanout.topic import Topic
from .fanout.tx_frames import TxFrames
from .handlers import logons, publishing, querying, reentitle, transactions, visibility
from .log.local import LocalLog
from .log.shared import SharedLog
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
from .queue.outbox import Outbox
from .session.access import LogonThrottle
from .session.session import Session
from .settings.config import Config, UserConfig
from .settings.functions import load_function
from .sow.history import History
from .sow.txlog import EXPIRE, LogEntry, changed_topics

log = logging.getLogger("server.engine")


def _sequence_of(raw: Any) -> int | None:
    seq = raw.get("s") if isinstance(raw, dict) else None
    return seq if type(seq) is int else None


Clock = Callable[[], float]


class Engine:
    def __init__(self, config: Config, clock: Clock) -> None:
        self.config = config
        self.clock = clock
        self._now: float | None = None  # the time of the unit of work under way (now())
        self.run = FanOutRun()
        self.tx_frames = TxFrames(self.run, self.now)  # holds a transaction's messages while it is applied
        self.topics: dict[str, Topic] = {
            t.name: Topic(
                t.name, t, self.run, load_function(t.conflation_merge), load_function(t.conflation_match)
            )
            for t in config.topics
        }
        settings = config.server
        for topic in self.topics.values():
            if topic.is_sow:  # what resuming a view reads (PROTOCOL 11.1)
                topic.sow.history = History(
                    settings.resume_history_changes, settings.resume_history_s, settings.resume_history_bytes
                )
        self._dropped: list[tuple[Session, list[Subscription]]] = []
        # Background conflation: sessions whose queues passed a quarter of a bound, in order,
        # and the runtime's wake-up for them (it conflates them when it has nothing else to do).
        self.crowded: dict[Session, None] = {}
        self.on_crowded: Callable[[], None] = lambda: None
        self.background_conflations = 0
        self.timers = Timers()  # conflation intervals and expiries; the runtime sleeps until next_due
        self.sessions: dict[int, Session] = {}
        self.client_names: dict[str, Session] = {}
        self.name_owners: dict[str, str] = {}  # with [auth]: client name -> the user it belongs to
        self.logon_throttle = LogonThrottle()  # failed logons per remote address (PROTOCOL 6.7)
        self.sequences: dict[str, int] = {}  # highest accepted publisher sequence per client name
        self.durability = Durability()
        self.on_log: Callable[[], None] = lambda: None  # set by the runtime: entries wait to be written
        self.replays: deque[ReplayRequest] = deque()
        self.on_replay: Callable[[], None] = lambda: None  # set by the runtime: a replay is requested
        self._session_ids = itertools.count(1)
        self.lsns = Lsns()  # the apply sequence: LSNs, and so bookmarks (broker/bookmarks.py)
        self.commands_processed = 0
        self.shared: SharedLog | None = None  # with [cluster]: the shared log (set by the runtime)
        self.local = LocalLog(self)
        self.changes: ChangeLog = self.local  # where commands send their changes

    # -- sessions ---------------------------------------------------------------------------

    def open_session(self, wake: Callable[[], None], peer: str | None = None) -> Session:
        """A new session; ``peer`` is the client's remote address (failed logons are counted by it)."""
        settings = self.config.server
        outbox = Outbox(settings.queue_max_bytes, settings.queue_max_messages)
        session = Session(next(self._session_ids), outbox, wake, self.run)
        session.peer = peer
        session.tx_frames = self.tx_frames
        session.on_dropped = self._note_dropped
        if settings.background_conflation:
            session.on_crowded = self._note_crowded
        self.sessions[session.id] = session
        return session

    def close_session(self, session: Session) -> None:
        """Forget a session: its subscriptions and everything they hold (the runtime frees its
        outbox when the socket is gone)."""
        for subscription in list(session.subscriptions.values()):
            self.unsubscribe(subscription)
        session.subscriptions.clear()
        self.sessions.pop(session.id, None)
        self.crowded.pop(session, None)
        if session.client_name is not None and self.client_names.get(session.client_name) is session:
            del self.client_names[session.client_name]
            if self.shared is not None:
                self.shared.release(session.client_name, session)

    def reload_auth(self, users: dict[str, UserConfig] | None) -> reentitle.Reentitled:
        """``[auth]`` was reloaded (PROTOCOL 6.8): every socket and subscription is re-decided now."""
        previous, self.config = self.config.users, replace(self.config, users=users)
        done = reentitle.reentitle(self, previous)
        self.settle()
        return done

    def topic(self, name: str) -> Topic:
        """The topic of that name; an unconfigured name is a plain pub/sub topic, made on first use."""
        found = self.topics.get(name)
        if found is None:
            found = self.topics[name] = Topic(name, None, self.run)
        return found

    def _lifetime(self, topic: str, key: str) -> float | None:
        found = self.topics.get(topic)
        version = found.records.get(key) if found is not None else None
        return None if version is None else version.expires_at

    def advance(self, now: float) -> None:
        """Expire the records whose lifetime has ended, and deliver every subscription-conflation
        interval that has ended, by ``now``."""
        self._now = None  # a new unit of work
        for name, key in self.timers.expiries_due(now, self._lifetime):
            version = self.topics[name].records.get(key)
            if version is None:
                continue
            # Decided once, here, as an entry of its own that names the version it ends: applying
            # it needs no clock, and in a cluster the first node's expiry is the only one.
            entry = LogEntry(0, EXPIRE, name, key, version.seq, None, None, now, None)
            self.changes.propose(Proposal(name, [entry], [stream_id(version.seq)]))
        released = [
            (subscription, *subscription.release(now))
            for subscription in self.timers.intervals_due(now)
            if not (subscription.closed or subscription.dropped)
        ]
        self.tx_frames.release(released)
        self.settle()

    def unsubscribe(self, subscription: Subscription) -> None:
        """End a subscription and release what it holds: its views, the changes waiting for the end
        of a conflation interval (and their timer entries), a replay's buffer."""
        subscription.closed = True
        subscription.waiting.clear()
        if subscription.held is not None:
            subscription.held.clear()
        subscription.replay_buffer.clear()
        self.timers.cancel(subscription)
        topic = self.topics.get(subscription.topic)
        if topic is None:
            return
        topic.remove(subscription)
        if topic.config is None and not topic.subscribers:
            del self.topics[topic.name]  # a plain topic lives only while someone listens

    def log_position(self, topic: str) -> int:
        """The LSN up to which the changes of ``topic`` are in the log (a bookmark replay reads up
        to here, and live messages follow)."""
        if self.shared is not None:
            return self.shared.position(topic)
        return self.durability.last_lsn

    def applied_position(self, topic: str) -> int:
        """The LSN up to which this server has applied the changes of ``topic``: a bookmark that
        resumes a view from here misses nothing (PROTOCOL 11.1)."""
        if self.shared is not None:
            return self.shared.position(topic)
        return self.lsns.last

    def not_in_log(self, topic: str) -> Callable[[int], str | None]:
        """Why an LSN of ``topic`` names no change the log holds, or None."""
        shared = self.shared
        if shared is not None:
            return lambda lsn: shared.not_in_log(topic, lsn)
        return self.lsns.not_in_log

    def begin_run(self) -> None:
        """After recovery, before the first connection. Without a transaction log, LSNs start at
        this run's start time (in the cluster's form, ms << 20), so a bookmark of an earlier run
        never names a change of this one; the resume histories that recovery did not restore
        start here."""
        if self.shared is not None:
            return  # a cluster's bookmarks are its streams' IDs; each history starts at its load
        if self.lsns.claim_epoch is None:
            self.lsns.restart(int(self.clock() * 1000) << 20)
        for topic in self.topics.values():
            history = topic.sow.history
            if history is not None and not topic.durable:
                history.floor = max(history.floor, self.lsns.last)

    def next_apply_seq(self) -> int:
        return self.lsns.next()

    def restart_lsn(self, lsn: int) -> None:
        """After recovery: the next change is numbered after everything in the log."""
        self.lsns.restart(lsn)

    def log(self, entry: LogEntry) -> None:
        self.log_payload(entry.lsn, entry.encode())
        for name in changed_topics(entry):  # how long a change takes to be on disk is measured
            topic = self.topics.get(name)
            if topic is not None:
                self.durability.time(entry.lsn, topic.latency.persisted, entry.timestamp)

    def log_payload(self, lsn: int, payload: bytes) -> None:
        waiting = bool(self.durability)
        self.durability.append(lsn, payload)
        if not waiting:
            self.on_log()

    def request_replay(self, request: ReplayRequest) -> None:
        self.replays.append(request)
        self.on_replay()

    def made_durable(self, lsn: int) -> None:
        """The runtime wrote and synced the log up to ``lsn``: send the persisted acks now due."""
        for session, ack in self.durability.made_durable(lsn, self.clock()):
            session.send(ack)
        self.settle()

    def persisted_ack(
        self, session: Session, header: Header, lsn: int, seq: int | None = None, reason: str | None = None
    ) -> None:
        """The ``persisted`` ack of a command whose effect is in the log up to ``lsn``: now or when it is."""
        client_name = session.client_name if seq is not None else None
        if not self.durability.wait(lsn, session, header.cid, client_name, seq, reason):
            fields: dict[str, Any] = {} if seq is None else {"s": seq}
            self.ack(session, header, "persisted", reason=reason, **fields)

    # -- commands ---------------------------------------------------------------------------

    def decode(self, session: Session, frame: bytes | str) -> list[Any]:
        """The commands of one inbound frame, in order (a failure ack, and none, when it is not JSON)."""
        self._now = None  # a new unit of work: its own time
        try:
            decoded = inbound.loads(frame)  # orjson, refusing integers it would alter
        except orjson.JSONDecodeError as error:
            self.fail(session, None, CommandError(BAD_MESSAGE, f"not JSON ({error.msg})"))
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
            self.settle()

    def now(self) -> float:
        """The time of the unit of work under way (a frame, or a slice of a big one), read from the
        clock once: every change it decides carries this one float object, so a SOW loaded from
        frames of 200 publishes keeps one per frame rather than one per record."""
        now = self._now
        if now is None:
            now = self._now = self.clock()
        return now

    def settle(self) -> None:
        """End of a unit of work: push the pending run, then remove the subscriptions dropped for
        back pressure."""
        self._now = None
        self.run.flush()
        while self._dropped:
            dropped, self._dropped = self._dropped, []
            for session, subscriptions in dropped:
                for subscription in subscriptions:
                    if session.subscriptions.get(subscription.sub_id) is subscription:
                        del session.subscriptions[subscription.sub_id]
                    self.unsubscribe(subscription)
            self.run.flush()

    def _note_crowded(self, session: Session) -> None:
        if session.outbox.crowded and session not in self.crowded:
            self.crowded[session] = None
            self.on_crowded()

    def conflate_crowded(self, stop: Callable[[], bool]) -> bool:
        """Background conflation: conflate the queues past a quarter of their bounds, oldest
        first, until ``stop`` says the time is up; whether some are left. Nothing is dropped
        (the unsubscribe policy acts only on a full queue) and nothing is written."""
        crowded = self.crowded
        while crowded and not stop():
            session = next(iter(crowded))
            del crowded[session]
            if session.close_code is None and session.outbox.crowded:
                session.outbox.relieve(drop=False)
                self.background_conflations += 1
        return bool(crowded)

    def _note_dropped(self, session: Session, subscriptions: list[Subscription]) -> None:
        # Not removed here: the topic that queued the message may be iterating its subscribers.
        self._dropped.append((session, subscriptions))

    def execute(self, session: Session, raw: Any) -> None:
        """Process one decoded command (call ``settle`` at the end of a run of them)."""
        cid = valid_cid(raw)
        try:
            if type(raw) is inbound.RefusedCommand:
                raise raw.error  # the frame reader could not read it exactly (protocol/inbound.py)
            plain = plain_publish(raw) if self.changes is self.local else None
            if plain is not None:  # a feed's plain publish, alone: no proposal, no acks
                publishing.publish_plain(self, session, plain)
            else:
                header = decode_header(raw)
                cid = header.cid
                body = decode_body(header, raw)
                self.dispatch(session, header, body)
        except CommandError as error:
            self.fail(session, cid, error, _sequence_of(raw))
        except Exception:
            log.exception("command failed unexpectedly on session %s: %.200r", session.id, raw)
            failure = CommandError(BAD_MESSAGE, "the server could not process this command")
            self.fail(session, cid, failure, _sequence_of(raw))
        self.commands_processed += 1

    def dispatch(self, session: Session, header: Header, body: Body) -> None:
        if isinstance(body, Logon):
            logons.logon(self, session, header, body)
            return
        self.check_logged_on(session)
        if isinstance(body, Publish):
            publishing.publish(self, session, header, body)
        elif isinstance(body, SowDelete):
            publishing.sow_delete(self, session, header, body)
        elif isinstance(body, Query):
            querying.query(self, session, header, body)
        elif isinstance(body, Unsubscribe):
            querying.unsubscribe(self, session, header, body)
        elif isinstance(body, Transaction):
            transactions.transact(self, session, header, body)
        elif isinstance(body, Visibility):
            visibility.set_visibility(self, session, header, body)
        elif isinstance(body, Simple):
            self.received(session, header)
            if header.c == "heartbeat":
                session.send(wire.HEARTBEAT)
            self.processed(session, header)
            if header.wants("persisted"):  # flush: every earlier command's effect on disk
                self.persisted_ack(session, header, self.durability.last_lsn)

    # -- acks -------------------------------------------------------------------------------

    def ack(self, session: Session, header: Header, kind: str, **fields: Any) -> None:
        session.send(wire.ack(kind, header.cid, **fields))

    def received(self, session: Session, header: Header) -> None:
        if header.wants("received"):
            self.ack(session, header, "received")

    def processed(self, session: Session, header: Header, **fields: Any) -> None:
        if header.wants_processed:
            self.ack(session, header, "processed", **fields)

    def fail(self, session: Session, cid: Any, error: CommandError, seq: int | None = None) -> None:
        fields = {} if seq is None else {"s": seq}  # lets a publisher tell which publish failed
        session.send(wire.ack("processed", cid, "failure", error.reason, **fields))

    def check_logged_on(self, session: Session) -> None:
        if self.config.users is not None and not session.logged_on:
            raise CommandError(LOGON_REQUIRED, "send logon first")
