"""A cluster's SOW snapshots in Redis: what a node starts from, and what lets the streams be trimmed.

Every ``snapshot_interval`` one node (whoever takes a lock with that lifetime, so a node that dies
holding it holds it no longer) writes each topic's SOW as of the stream ID it has applied up to,
unless Redis holds a newer one (a lagging node never puts back an older snapshot), then trims the
stream to what is newer than both that snapshot and ``retention``, and records the cut.

A node whose position is below a cut may have missed entries (it was cut off for longer than
``retention``, or a trim ran while it started): it resynchronises the topic from the snapshot,
sending its subscribers the difference, then reads the stream on from the snapshot's ID. A new
node does the same from an empty SOW, so its start-up follows the size of the SOW, not of the
history.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

import orjson
from redis.exceptions import RedisError

from ..core.broker.applying import load
from ..core.broker.changelog import PLAIN_STREAM, SEQ_BITS, lsn_of, stream_id
from ..core.engine import Engine
from ..core.log.shared import SharedLog
from ..core.records.version import RecordVersion
from ..core.settings.config import ClusterSettings
from .redis_script import TRIM, WRITE_SNAPSHOT

log = logging.getLogger("server.cluster")

SNAPSHOT_FORMAT = 1
ENCODE_SLICE = 10_000  # records encoded between two turns of the event loop (about 10 ms)


class Snapshots:
    def __init__(
        self,
        redis: Any,
        engine: Engine,
        shared: SharedLog,
        settings: ClusterSettings,
        prefix: str,
        stream_key: Callable[[str], str],
        marker: Callable[[], str],
    ) -> None:
        self.redis = redis
        self.engine = engine
        self.shared = shared
        self.settings = settings
        self.prefix = prefix
        self.stream_key = stream_key
        self.marker = marker  # the marker this node loaded under: it writes only under that one
        self.marker_key = f"{prefix}:incarnation"
        self._write = redis.register_script(WRITE_SNAPSHOT)
        self._trim = redis.register_script(TRIM)
        self.written = 0
        self.resyncs = 0

    def keys(self, topic: str) -> tuple[str, str, str]:
        """The keys of ``topic``'s snapshot, its stream ID and its trim record."""
        p = self.prefix
        return f"{p}:snapshot:{topic}", f"{p}:snapshot-id:{topic}", f"{p}:trimmed:{topic}"

    async def missed(self, topic: str, position: int) -> bool:
        """Whether entries after ``position`` may have been trimmed away."""
        cut = await self.redis.get(self.keys(topic)[2])
        return cut is not None and lsn_of(cut.decode()) > position + 1

    async def resync(self, topic: str, reseeded: bool = False) -> int:
        """Bring ``topic``'s SOW to its snapshot, telling subscribers what changed; the LSN the
        snapshot is as of (0: there is none, read the stream from its start). ``reseeded``:
        Redis was re-seeded after it lost the log (redis_seeding.py), and a topic without a
        snapshot is empty now."""
        raw = await self.redis.get(self.keys(topic)[0])
        if raw is None and not reseeded:
            return 0
        empty = b'{"format":%d,"lsn":0,"records":[]}' % SNAPSHOT_FORMAT  # a re-seed left the topic empty
        document = orjson.loads(raw if raw is not None else empty)
        if document.get("format") != SNAPSHOT_FORMAT:
            raise ValueError(f"the snapshot of {topic!r} has an unknown format")
        lsn = int(document["lsn"])
        target = self.engine.broker.topics[topic]
        # A node starting has nothing to tell anyone; a node that fell behind tells what it holds
        # and whoever listens (an empty topic's subscribers and aggregations too).
        tell = bool(target.records) or reseeded or target.listened
        if tell:
            self.resyncs += 1
            if not reseeded:  # after a re-seed the node has said why already (redis_log.py)
                log.error(
                    "cluster node %s missed changes of %r that the stream no longer holds (it was behind "
                    "by more than the retention): resynchronising from the snapshot",
                    self.shared.node,
                    topic,
                )
        versions = (
            RecordVersion(key, data, seq, ts, expires_at)
            for key, data, seq, ts, expires_at in document["records"]
        )
        # The store makes the SOW the snapshot's and its history start there; subscribers hear the
        # difference, a record the snapshot no longer holds as deleted now.
        load(target, versions, lsn, self.engine.broker.timers, told_at=time.time() if tell else None)
        if tell:
            self.engine.broker.settle()
        self.shared.positions[topic] = lsn
        return lsn

    async def write_periodically(self, healthy: Callable[[], bool]) -> None:
        """Every ``snapshot_interval``, while ``healthy()``: this node writes the snapshots if it
        takes the lock (a lifetime of one interval, so a node that dies holding it holds it no
        longer than that)."""
        interval = self.settings.snapshot_interval_s
        while True:
            await asyncio.sleep(interval)
            if not healthy():
                continue
            try:
                lock = f"{self.prefix}:snapshot-lock"
                if await self.redis.set(lock, self.shared.node, nx=True, px=int(interval * 1000)):
                    await self.write_all()
            except (RedisError, OSError) as error:
                log.warning("could not write the cluster's snapshots (%s); next time", error)

    async def write_all(self) -> None:
        """Write every topic's snapshot that is newer than Redis's, and trim behind it."""
        keep_after_ms = int((time.time() - self.settings.retention_s) * 1000)
        for topic in self.engine.broker.config.topics:
            lsn = self.shared.position(topic.name)
            if lsn == 0:
                continue  # nothing was ever applied: no snapshot to write
            # Versions are immutable: the list is the SOW as of ``lsn``, however long encoding takes.
            versions = list(self.engine.broker.topics[topic.name].records.values())
            document = await encode(lsn, versions)
            snapshot, snapshot_id, trimmed = self.keys(topic.name)
            marker = self.marker()
            keys = [snapshot, snapshot_id, self.marker_key]
            if not await self._write(keys=keys, args=[stream_id(lsn), document, marker]):
                continue  # another node's is newer (this one lags): its trim stands
            cut = stream_id(min(lsn, max(keep_after_ms, 0) << SEQ_BITS))
            await self._trim(keys=[self.stream_key(topic.name), trimmed, self.marker_key], args=[cut, marker])
        plain_cut = f"{max(keep_after_ms, 0)}-0"
        await self.redis.xtrim(self.stream_key(PLAIN_STREAM), minid=plain_cut, approximate=False)
        self.written += 1


async def encode(lsn: int, versions: list[RecordVersion]) -> bytes:
    """A snapshot document, encoded in slices with the event loop let run between them: a
    million records would otherwise stop every socket of the node for about a second."""
    parts: list[bytes] = []
    for start in range(0, len(versions), ENCODE_SLICE):
        chunk = versions[start : start + ENCODE_SLICE]
        rows = [[v.key, v.data, v.seq, v.timestamp, v.expires_at] for v in chunk]
        parts.append(orjson.dumps(rows)[1:-1])  # the rows without the list's brackets
        await asyncio.sleep(0)
    return b'{"format":%d,"lsn":%d,"records":[%s]}' % (SNAPSHOT_FORMAT, lsn, b",".join(parts))
