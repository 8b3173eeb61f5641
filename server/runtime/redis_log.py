"""The shared log in Redis (docs/protocol.md, Cluster): a cluster node's reader, writer and snapshots.

Keys, all under ``{<name>}`` (one hash slot, so the script may touch them together even on a
Redis Cluster): ``:stream:<topic>`` a configured topic's ordered log, ``:plain`` the one log of
every topic that is not configured, ``:versions:<topic>`` the ID of the entry that wrote each
record, ``:seqs`` the highest publisher sequence per client name, ``:snapshot:<topic>`` a
topic's SOW as of one stream ID, and ``:snapshot-lock``, whichever node writes the snapshots.

- **Writer**: everything the engine proposed since the last round trip goes out as one pipeline
  of script calls (``redis_script.py``); the answers go to ``core/log/replica.py``.
- **Reader**: one blocking ``XREAD`` over every stream, from the ID applied up to; each entry is
  applied in order, the node's own and the others' alike.
- **Start**: each topic's snapshot, then its stream after the snapshot's ID; ``ready`` (and
  ``/healthz`` 200) only then.
- **Snapshots**: every ``snapshot_interval`` one node (a lock with a lifetime, so a node that dies
  holding it holds it no longer than that) writes every topic's snapshot at the ID it has applied
  up to, then trims each stream to what is newer than both the snapshot and ``retention``.
- **Outage**: while Redis cannot be reached the node is not ``available`` (changes are refused
  with ``unavailable``, ``/healthz`` answers 503) and the reader retries; when Redis is back it
  reads on from the ID it applied up to, so nothing is lost and nothing applied twice.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

import redis.asyncio as redis
from redis.exceptions import RedisError

from ..core.broker.changelog import PLAIN_STREAM, lsn_of, stream_id
from ..core.engine import Engine
from ..core.log.loss import Loss, error_line
from ..core.log.replica import Replica
from ..core.log.shared import SharedLog
from ..core.session.session import Session
from ..core.settings.config import ClusterSettings
from ..core.sow.txlog import LogEntry
from .collector import Collector
from .pump import Pump
from .redis_chain import StreamBatch, numbered
from .redis_names import RedisNames
from .redis_seeding import LogLost, Seeding
from .redis_snapshots import Snapshots
from .redis_writer import Writer

log = logging.getLogger("server.cluster")

READ_COUNT = 1000  # entries per XREAD or XRANGE round trip
REPLAY_BYTES = 256 * 1024  # what a bookmark replay reads in one round trip (logreader.CHUNK_BYTES)
REPLAY_COUNT = 256  # entries at most in one; fewer once they are large
READ_BLOCK_MS = 1000
MARKER_CHECK_S = 0.25  # how often the reader looks at the cluster's marker (redis_seeding.py)
RETRY_S = 0.5  # between attempts to reach Redis again
MAX_IN_FLIGHT = 1000  # changes of one socket on their way through the log
SYNC_TIMEOUT_S = 5.0  # how long a bookmark subscription waits for this node to catch up
CLOSE_WAIT_S = 2.0  # for the cluster's tasks to stop at shutdown


class RedisLog:
    def __init__(
        self, engine: Engine, shared: SharedLog, settings: ClusterSettings, pump: Pump, collector: Collector
    ) -> None:
        """``shared``: the log ``engine`` was built with (every change goes through Redis, this
        node's own too), kept here to send what it holds and report what Redis answers; ``pump``
        runs after every call into the core (pump.py); ``collector`` freezes what the node has
        loaded (collector.py)."""
        self.collector = collector
        self.engine = engine
        self.settings = settings
        self.shared = shared
        self.pump = pump
        self.replica = Replica(engine.broker, shared)
        self.ready = False  # the state is loaded: /healthz may answer 200 (while available)
        self.prefix = "{" + settings.name + "}"
        # redis-py types every answer as ``bytes | str | None``: read through ``Any``, in the
        # shapes this module knows it asks for (bytes, no decode_responses).
        self.redis: Any = redis.from_url(settings.redis_url, socket_timeout=5.0, socket_connect_timeout=2.0)
        self._applied = asyncio.Event()  # replaced after every batch applied: wakes catch_up waiters
        self._tasks: list[asyncio.Task[None]] = []
        self.names = RedisNames(self.redis, self.replica, self.prefix, pump)
        self.snapshots = Snapshots(
            self.redis, engine, shared, settings, self.prefix, self.stream_key, self._marker
        )
        self.seeding = Seeding(self.redis, engine.broker, self.shared, self.prefix, self.snapshots)
        self.writer = Writer(
            self.redis, self.replica, self.names, self.seeding, self.stream_key, self.caught_up, pump
        )

    # -- keys ---------------------------------------------------------------------------------

    def stream_key(self, stream: str) -> str:
        return f"{self.prefix}:plain" if stream == PLAIN_STREAM else f"{self.prefix}:stream:{stream}"

    def _marker(self) -> str:
        return self.seeding.marker  # the one this node loaded under (snapshots are written under it)

    def _streams(self) -> list[str]:
        return [topic.name for topic in self.engine.broker.config.topics] + [PLAIN_STREAM]

    # -- life ---------------------------------------------------------------------------------

    def start(self) -> None:
        if not self._tasks:
            self._tasks = [
                asyncio.create_task(self._run(), name="cluster-reader"),
                asyncio.create_task(self.writer.run(), name="cluster-writer"),
                asyncio.create_task(
                    self.snapshots.write_periodically(lambda: self.healthy), name="cluster-snapshots"
                ),
                asyncio.create_task(self.names.listen(), name="cluster-names"),
                asyncio.create_task(self.names.keep_alive(), name="cluster-liveness"),
            ]

    async def close(self) -> None:
        tasks = [*self._tasks, *self.writer.retries]
        for task in tasks:
            task.cancel()
        # redis-py may swallow a cancellation that lands mid-command: wait a little, not for ever.
        _, stuck = await asyncio.wait(tasks, timeout=CLOSE_WAIT_S) if tasks else (None, [])
        if stuck:
            log.warning("%d cluster task(s) did not stop within %.0f s", len(stuck), CLOSE_WAIT_S)
        await self.redis.aclose()

    @property
    def healthy(self) -> bool:
        return self.ready and self.shared.available

    # -- reading ------------------------------------------------------------------------------

    async def _run(self) -> None:
        """Load the state, then read every stream for ever; through outages, from where it was."""
        while not self.ready:
            try:
                await self._load()
            except (RedisError, OSError) as error:
                log.warning("cannot load the cluster's state from Redis (%s); trying again", error)
                await asyncio.sleep(RETRY_S)
        while True:
            try:
                await self._read_on()
            except LogLost as lost:
                await self._reseed(lost.loss)
            except (RedisError, OSError) as error:
                if self.shared.available:
                    log.error("lost Redis (%s): refusing changes until it is back", error)
                self.shared.available = False
                await asyncio.sleep(RETRY_S)

    async def _load(self) -> None:
        started = time.perf_counter()
        engine, shared = self.engine, self.shared
        await self.seeding.settle(starting=True)
        for topic in engine.broker.config.topics:
            await self._bring_up_to_date(topic.name)
        await self._load_rest()
        self.ready = shared.available = True
        records = sum(len(topic.records) for topic in engine.broker.topics.values())
        log.info(
            "cluster node %s loaded %d records from Redis in %.2f s",
            shared.node,
            records,
            time.perf_counter() - started,
        )
        self.collector.collect_all(f"loading {records} records from Redis")

    async def _load_rest(self) -> None:
        """The plain stream's position and the publisher sequences, after the topics."""
        # Plain topics keep nothing: live from the stream's end.
        tail = await self.redis.xrevrange(self.stream_key(PLAIN_STREAM), count=1)
        self.shared.positions[PLAIN_STREAM] = lsn_of(tail[0][0].decode()) if tail else 0
        sequences = await self.redis.hgetall(f"{self.prefix}:seqs")
        # The cluster's, not this node's: after a re-seed that left this node's state out, a
        # sequence only this node had seen is not the cluster's any more.
        self.engine.broker.load_sequences({name.decode(): int(seq) for name, seq in sequences.items()})

    async def _reseed(self, loss: Loss) -> None:
        """Redis lost the shared log: say so once, take part in re-seeding it
        (redis_seeding.py), then load from it as a restarting node does, telling subscribers
        the difference. Refusing changes (and /healthz 503) all the while."""
        self.shared.available = False
        log.error("%s", error_line(self.shared.node, loss))
        kept: bool | None = None
        while True:
            try:
                if kept is None:
                    kept = await self.seeding.settle(starting=False, stale=True)
                for topic in self.engine.broker.config.topics:
                    position = await self._resync(topic.name, reseeded=True)
                    await self._catch_up(topic.name, position)
                await self._load_rest()
                break
            except (RedisError, OSError) as error:
                log.warning("could not finish re-seeding Redis (%s); trying again", error)
                await asyncio.sleep(RETRY_S)
        self._settle_doubtful()
        log.warning(
            "Redis re-seeded as incarnation %s; this node's state %s; accepting changes again",
            self.seeding.marker,
            "went into it" if kept else "was older than the other nodes' and is replaced",
        )

    async def _bring_up_to_date(self, topic: str) -> None:
        """Apply ``topic``'s stream up to its end: from the snapshot when this node has applied
        nothing yet, or when a trim removed entries it has not applied (the trim record says so
        before it reads, a break in the chain while it reads: redis_chain.py)."""
        position = self.shared.position(topic)
        if position == 0 or await self.snapshots.missed(topic, position):
            position = await self._resync(topic)
        while not await self._catch_up(topic, position):
            position = await self._resync(topic)
            if position == 0:  # no snapshot to resynchronise from: what is lost stays lost
                log.error("the stream of %r misses entries and there is no snapshot: reading on", topic)
                await self._catch_up(topic, self.shared.position(topic), chained=False)
                return

    async def _resync(self, topic: str, reseeded: bool = False) -> int:
        """``Snapshots.resync``, which feeds the core the difference: then the pump runs."""
        try:
            return await self.snapshots.resync(topic, reseeded)
        finally:
            self.pump()

    async def _recover(self) -> None:
        """Redis answers again: read every stream up to its end, then settle the changes whose
        answer the outage lost. A script runs whole or not at all, so a change in doubt is in
        the stream entirely (this node has now applied it: acked) or not at all (sent again)."""
        await self.redis.connection_pool.disconnect(inuse_connections=False)  # died with the old Redis
        loss = await self.seeding.check()  # a Redis back without its data (core/log/loss.py)
        if loss is not None:
            raise LogLost(loss)
        for topic in self.engine.broker.config.topics:
            await self._bring_up_to_date(topic.name)
        await self._catch_up(PLAIN_STREAM, self.shared.position(PLAIN_STREAM))
        doubtful = self._settle_doubtful()
        log.warning("Redis is back: accepting changes again (%d in doubt settled)", doubtful)

    def _settle_doubtful(self) -> int:
        doubtful, self.writer.in_doubt = self.writer.in_doubt, []
        for proposal in doubtful:
            count = len(proposal.entries)
            if count and proposal.waiting == -count:  # every entry came back
                proposal.waiting = 0
                self.replica.done(proposal)
            else:
                self.shared.outgoing.append(proposal)
        self.engine.broker.settle()
        self.shared.available = True
        self.pump()  # the acks sent, and what goes to Redis again
        return len(doubtful)

    async def _catch_up(self, topic: str, after: int, chained: bool = True) -> bool:
        """Apply the stream of ``topic`` after ``after`` up to its end; False when it stopped at
        a break in the chain (``chained``: it checks for one)."""
        async with aclosing(self._range(topic, "(" + stream_id(after) if after else "-", "+")) as batches:
            async for batch in batches:
                if not self._apply(topic, batch, chained):
                    return False
        return True

    async def _range(
        self, stream: str, start: str, end: str, batch_bytes: int | None = None
    ) -> AsyncGenerator[StreamBatch]:
        """``XRANGE`` of ``stream`` from ``start`` to ``end``, a batch per round trip of ``READ_COUNT``
        entries; with ``batch_bytes`` (a replay), of that many bytes at the size of the last batch's
        largest entry, growing at most twofold a batch up to ``REPLAY_COUNT``."""
        key = self.stream_key(stream)
        count = READ_COUNT if batch_bytes is None else 4
        while True:
            batch = await self.redis.xrange(key, min=start, max=end, count=count)
            if batch:
                yield batch
            if len(batch) < count:
                return
            start = "(" + batch[-1][0].decode()
            if batch_bytes is not None:
                largest = max(len(fields[b"e"]) for _, fields in batch)
                count = max(1, min(REPLAY_COUNT, 2 * count, batch_bytes // largest))

    async def _read_on(self) -> None:
        shared = self.shared
        streams = {self.stream_key(s): s for s in self._streams()}
        check_at = time.monotonic() + self.settings.snapshot_interval_s
        marker_at = 0.0
        while True:
            if time.monotonic() > check_at:
                # Here, between reads, so that no entry is applied twice: a node that fell behind
                # by more than the retention resynchronises (redis_snapshots.py).
                check_at = time.monotonic() + self.settings.snapshot_interval_s
                if (loss := await self.seeding.check()) is not None:
                    raise LogLost(loss)
                for topic in self.engine.broker.config.topics:
                    await self._bring_up_to_date(topic.name)
            positions: dict[Any, Any] = {key: stream_id(shared.position(s)) for key, s in streams.items()}
            if not shared.available:
                await self._recover()
                continue
            if time.monotonic() > marker_at:
                # A Redis flushed or replaced under a running node: noticed within a read or two
                # (a re-seed waits longer for the nodes that are up). Not pipelined with the
                # XREAD: redis-py notices a dead Redis later in a pipeline, and a change sent
                # meanwhile would wait for Redis instead of being refused.
                marker_at = time.monotonic() + MARKER_CHECK_S
                if (loss := self.seeding.check_marker(await self.redis.get(self.seeding.key))) is not None:
                    raise LogLost(loss)
            answer = await self.redis.xread(positions, count=READ_COUNT, block=READ_BLOCK_MS)
            for key, batch in answer:
                if not self._apply(stream := streams[key.decode()], batch):
                    await self._bring_up_to_date(stream)  # entries trimmed before this node read them

    def _apply(self, stream: str, batch: StreamBatch, chained: bool = True) -> bool:
        """Apply ``batch`` in order; False when it stopped at an entry that does not follow the
        one applied last (a configured topic's, ``chained``: redis_chain.py)."""
        engine, replica, shared = self.engine, self.replica, self.shared
        chained = chained and stream != PLAIN_STREAM  # plain topics keep nothing to resynchronise
        whole = True
        for read in numbered(batch):
            if chained and not read.follows(shared.position(stream)):
                whole = False
                break
            try:
                replica.apply(stream, read.entry, read.origin)
            except Exception:
                log.exception("applying %s of %r failed; carrying on", stream_id(read.entry.lsn), stream)
                shared.positions[stream] = read.entry.lsn  # past it: the next entry follows this one
        engine.broker.settle()
        self.pump()
        self._applied.set()
        self._applied = asyncio.Event()
        return whole

    async def caught_up(self, stream: str, lsn: int) -> None:
        """Wait until this node has applied ``stream`` up to ``lsn``."""
        while self.shared.position(stream) < lsn:
            await self._applied.wait()

    async def sync(self, stream: str) -> None:
        """Wait until this node has applied everything ``stream`` holds now (a bookmark from another
        node names nothing this node has not applied once this returns)."""
        tail = await self.redis.xrevrange(self.stream_key(stream), count=1)
        if tail:
            await self.caught_up(stream, lsn_of(tail[0][0].decode()))

    async def read(
        self, stream: str, after_lsn: int, since: float | None, until_lsn: int
    ) -> AsyncGenerator[list[LogEntry]]:
        """The entries of ``stream`` after ``after_lsn`` (or from the time ``since``) up to
        ``until_lsn``, numbered (a bookmark replay), a batch of ~``REPLAY_BYTES`` when asked for."""
        if since is not None:
            start = f"{int(since * 1000)}-0"
        else:
            start = "(" + stream_id(after_lsn) if after_lsn else "-"
        if until_lsn:
            async for batch in self._range(stream, start, stream_id(until_lsn), REPLAY_BYTES):
                yield [read.entry for read in numbered(batch)]

    async def before(self, commands: list[Any]) -> None:
        """Before a frame runs: a subscription with a bookmark, which may come from another node,
        waits until this node has applied its topic's stream as far as Redis holds it now."""
        for raw in commands:
            if isinstance(raw, dict) and raw.get("bm") not in (None, "now", "0"):
                topic = raw.get("t")
                if isinstance(topic, str) and topic in self.engine.broker.topics and self.shared.available:
                    try:
                        async with asyncio.timeout(SYNC_TIMEOUT_S):
                            await self.sync(topic)
                    except (RedisError, OSError, TimeoutError) as error:
                        log.warning("could not bring %r up to date for a bookmark (%s)", topic, error)

    def waits(self, session: Session, raw: Any) -> bool:
        """Whether command ``raw`` must wait for the socket's changes in flight, to keep the
        socket's order: a query sees them, a logon's name is claimed before what follows it, a
        delta merges into them, a delete is decided on them, and nothing overtakes a change that
        may be decided again or a logon whose name is being claimed. Only plain publishes follow
        others straight into the log."""
        shared = self.shared
        if session not in shared.in_flight:
            return False
        command = raw.get("c") if isinstance(raw, dict) else None
        return command != "publish" or session in shared.guarded

    async def paced(self, session: Session) -> None:
        """After a frame: a socket with many changes in flight waits for them (back pressure on a
        publisher that sends faster than the shared log takes)."""
        if self.shared.in_flight.get(session, 0) >= MAX_IN_FLIGHT:
            await self.settled(session)

    async def settled(self, session: Session) -> None:
        """Wait until every change ``session`` proposed is acked or refused (the pump sets the
        event once the shared log says so)."""
        while session in self.shared.in_flight:
            await self.pump.settled.setdefault(session, asyncio.Event()).wait()
