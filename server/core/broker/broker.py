"""The broker: the state every command reads, and the one writer of each piece of it.

The engine (core/engine.py) decodes a frame and dispatches each command to its handler
(core/handlers), which takes the broker and the command. What more than one module changes is
changed here, by one method each: publisher sequences (``accept_sequence``, ``load_sequences``),
client names (``give_name``, ``free_name``) and their owners (``record_owner``, ``load_owners``),
the ``[auth]`` in use (``reload_users``) and the unit of work's time (``now``, ``begin_unit``).
The rest is objects that are their own writers: the topics, the timers, the LSN sequence
(``Lsns``), the durability, the fan-out run.

It never calls out. What the runtime must act on it keeps, and the runtime looks at it after it
feeds the core (runtime/pump.py): the entries waiting to be written (``durability``), the
bookmark replays requested (``replays``), the queues to conflate in the background
(``crowded``) and the earliest timer (``timers.next_due``); and in a cluster what waits in the
shared log for Redis (log/shared.py).
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from ..aggregate.view import GroupTopic
from ..fanout.run import FanOutRun
from ..fanout.topic import Topic
from ..fanout.tx_frames import TxFrames
from ..queue.outbox import Outbox
from ..session.access import LogonThrottle
from ..session.session import Commons, Session, SessionPort
from ..settings.functions import load_function
from ..settings.unkept import KeptTopics
from ..sow.history import History
from ..sow.txlog import EXPIRE, LogEntry, changed_topics
from .bookmarks import Lsns, ReplayRequest
from .changelog import ChangeLog, Proposal, stream_id
from .durability import Durability
from .timers import Timers

if TYPE_CHECKING:
    from ..fanout.subscription import Subscription
    from ..settings.config import Config, UserConfig

Clock = Callable[[], float]
# Builds the change log the broker's commands propose to, for the broker it serves.
LogFactory = Callable[["Broker"], ChangeLog]


class Broker:
    """The state of one server: built by the engine, with the change log the composition root
    chose (``log``); handed to every handler."""

    def __init__(self, config: Config, clock: Clock, log: LogFactory) -> None:
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
            if topic.is_sow:  # what resuming a view reads (docs/protocol.md, Resuming a view)
                topic.sow.history = History(
                    settings.resume_history_changes, settings.resume_history_s, settings.resume_history_bytes
                )
        # Noted by the sessions, finished after the unit of work: subscriptions dropped for back
        # pressure (settle), and for background conflation the sessions whose queues passed a
        # quarter of a bound, in order (the runtime calls conflate_crowded when it is idle).
        self._dropped: list[tuple[Session, list[Subscription]]] = []
        self.crowded: dict[Session, None] = {}
        background = settings.background_conflation
        # What the server keeps: a command on any other topic says so (settings/unkept.py).
        self.kept = KeptTopics(t.name for t in config.topics)
        configured = self.kept if settings.unconfigured_topics == "refuse" else None
        self._commons = Commons(
            self.run, self.tx_frames, self._dropped, self.crowded if background else None, configured
        )
        self.background_conflations = 0
        self.commands_processed = 0
        self.timers = Timers()  # conflation intervals and expiries; the runtime sleeps until next_due
        self.sessions: dict[int, Session] = {}
        self._session_ids = itertools.count(1)
        self._names: dict[str, Session] = {}  # client name -> the session holding it
        self._owners: dict[str, str] = {}  # with [auth]: client name -> the user it belongs to
        # failed logons per remote address (docs/protocol.md, Who may connect)
        self.logon_throttle = LogonThrottle()
        self._sequences: dict[str, int] = {}  # highest accepted publisher sequence per client name
        self.durability = Durability()  # entries waiting to be written, acks waiting for the disk
        self.replays: deque[ReplayRequest] = deque()  # bookmark replays waiting for the runtime
        self.lsns = Lsns()  # the apply sequence: LSNs, and so bookmarks (broker/bookmarks.py)
        # Where commands send their changes, and what they ask of the log: last, for the local
        # log works on the state above.
        self.changes: ChangeLog = log(self)

    # -- the unit of work ---------------------------------------------------------------------

    def now(self) -> float:
        """The time of the unit of work under way (a frame, or a slice of a big one), read from the
        clock once: every change it decides carries this one float object, so a SOW loaded from
        frames of 200 publishes keeps one per frame rather than one per record."""
        now = self._now
        if now is None:
            now = self._now = self.clock()
        return now

    def begin_unit(self) -> None:
        """A new unit of work: its own time."""
        self._now = None

    def settle(self) -> None:
        """End of a unit of work: write the derived views' changes (aggregations: each group a
        unit changed, once), push the pending run, then remove the subscriptions dropped for back
        pressure."""
        self._now = None
        self.run.derive()
        self.run.flush()
        dropped = self._dropped
        while dropped:
            # Not removed when dropped: the topic that queued the message may have been iterating
            # its subscribers.
            batch = dropped[:]
            dropped.clear()
            for session, subscriptions in batch:
                for dropped_one in subscriptions:
                    # The sub_id goes, with whichever subscription took it over since (hand_over).
                    subscription: Subscription | None = dropped_one
                    while subscription is not None:
                        if session.subscriptions.get(subscription.sub_id) is subscription:
                            del session.subscriptions[subscription.sub_id]
                        self.unsubscribe(subscription)
                        subscription = subscription.successor
            self.run.flush()

    # -- topics and subscriptions -------------------------------------------------------------

    def topic(self, name: str) -> Topic:
        """The topic of that name; an unconfigured name is a plain pub/sub topic, made on first use."""
        found = self.topics.get(name)
        if found is None:
            found = self.topics[name] = Topic(name, None, self.run)
        return found

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
        groups = subscription.topic_ref
        if isinstance(groups, GroupTopic):  # an aggregated view's (aggregate/view.py)
            groups.remove(subscription)
            if not groups.subscribers:
                groups.origin.release()
            return
        if topic is None:
            return
        topic.remove(subscription)
        if topic.config is None and not topic.subscribers:
            del self.topics[topic.name]  # a plain topic lives only while someone listens

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

    # -- sessions -----------------------------------------------------------------------------

    def open_session(self, port: SessionPort, peer: str | None = None) -> Session:
        """A new session of the socket ``port`` writes; ``peer`` is the client's remote address
        (failed logons are counted by it)."""
        settings = self.config.server
        outbox = Outbox(settings.queue_max_bytes, settings.queue_max_messages)
        session = Session(next(self._session_ids), outbox, port, self._commons, peer)
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
        name = session.client_name
        if self.free_name(session) and name is not None:
            self.changes.release_name(name, session)

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

    # -- identities -----------------------------------------------------------------------------

    def reload_users(self, users: dict[str, UserConfig] | None) -> Mapping[str, UserConfig] | None:
        """``[auth]`` was reloaded (docs/protocol.md, Reloading entitlements): its users from now
        on; the users before."""
        previous, self.config = self.config.users, replace(self.config, users=users)
        return previous

    @property
    def client_names(self) -> Mapping[str, Session]:
        """Client name -> the session holding it (one name, one connection: docs/protocol.md, Cluster)."""
        return self._names

    def give_name(self, name: str, session: Session) -> None:
        """``session`` holds client name ``name`` from now on (one name, one connection: the logon
        closed any other socket holding it)."""
        self._names[name] = session

    def free_name(self, session: Session) -> bool:
        """``session`` lets go of its client name; whether it held it."""
        name = session.client_name
        if name is None or self._names.get(name) is not session:
            return False
        del self._names[name]
        return True

    @property
    def name_owners(self) -> Mapping[str, str]:
        """With ``[auth]``: client name -> the user it belongs to (docs/protocol.md, Who may connect)."""
        return self._owners

    def record_owner(self, name: str, user_id: str) -> None:
        self._owners[name] = user_id

    def load_owners(self, owners: Mapping[str, str]) -> None:
        """The owners a log holds (a restart's recovery): they replace the ones known."""
        self._owners = dict(owners)

    # -- publisher sequences (docs/protocol.md, Durability)
    # ----------------------------------------------------

    @property
    def sequences(self) -> Mapping[str, int]:
        """The highest publisher sequence accepted per client name: a publish at or below it is
        a duplicate."""
        return self._sequences

    def accept_sequence(self, name: str, seq: int, logged: bool = False) -> None:
        """``seq`` of client name ``name`` is accepted: the highest is the highest, whatever
        order the streams of a cluster are read in. ``logged``: what carried it is in the log
        already (a cluster's Redis holds it), so it is persisted too (what a logon reports)."""
        if seq > self._sequences.get(name, 0):
            self._sequences[name] = seq
        if logged:
            self.durability.persist_sequence(name, seq)

    def load_sequences(self, sequences: Mapping[str, int]) -> None:
        """The sequences a log holds (recovery, or a cluster's Redis at load): they replace the
        ones known, and are persisted (they are in the log)."""
        self._sequences = dict(sequences)
        self.durability.load_sequences(sequences)

    # -- the log --------------------------------------------------------------------------------

    def log(self, entry: LogEntry) -> None:
        """Append ``entry`` (numbered) to the transaction log's pending writes (the runtime's log
        writer takes them: runtime/logstore.py)."""
        self.durability.append(entry.lsn, entry.encode())
        for name in changed_topics(entry):  # how long a change takes to be on disk is measured
            topic = self.topics.get(name)
            if topic is not None:
                self.durability.time(entry.lsn, topic.latency.persisted, entry.timestamp)

    def made_durable(self, lsn: int) -> None:
        """The runtime wrote and synced the log up to ``lsn``: send the persisted acks now due."""
        for session, ack in self.durability.made_durable(lsn, self.clock()):
            session.send(ack)
        self.settle()

    def request_replay(self, request: ReplayRequest) -> None:
        """A bookmark subscription waits for the runtime to read the log back to it (replaying.py)."""
        self.replays.append(request)
