"""A cluster's incarnation in Redis, and re-seeding Redis when it lost the shared log.

``core/log/loss.py`` says how a node tells that Redis lost data. What the cluster does then:
every node that finds it stops taking changes (``/healthz`` 503, ``unavailable``), the nodes that
are up rebuild Redis from the newest state they hold between them, and every node loads from
Redis again, as a restarting node does. Refusing service until an operator acts would leave the
operator nothing to act with: the state that was acked is in the nodes' memory, and a node
restarted to recover would load the empty Redis. Re-seeding keeps every change any node still
holds, and no node serves (``/healthz`` 200) until it serves the re-seeded state.

1. The first node to notice swaps the marker for ``seeding <token>``, only if it is still what
   that node found, and in the same step deletes every stream, snapshot, version hash, trim
   record and client name holder (what is left is older than what the nodes hold) and sets a
   deadline ``GRACE_S`` ahead by Redis's clock. Publisher sequences and client name owners stay:
   merging only raises them.
2. Every node that is up adds its state under that marker, marked busy meanwhile: each topic's
   snapshot at the ID it applied up to, kept only where it is newer than another node's (nodes
   apply one order, so the newer is the one with more of it), with the record versions it
   implies; its publisher sequences (the highest wins); its client names' owners and holders.
3. Once the deadline has passed and no node is busy (or ``BUSY_LIMIT_S`` after it), any node
   finishes: each stream starts again, empty, after its snapshot's ID, with a trim record saying
   the snapshot stands for everything up to it, and the marker becomes ``live <token>``.
4. Every node loads from Redis (redis_log.py), telling its subscribers the difference.

A node that starts while Redis holds neither a marker nor anything of the cluster does step 1
itself: a new cluster looks just like a Redis that lost everything, and the nodes that are up and
hold the state need the grace to say so. A Redis that holds the cluster's keys but no marker (a
cluster that ran before there were markers) is adopted as it is.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from typing import Any

from ..core.broker.broker import Broker
from ..core.broker.changelog import PLAIN_STREAM, lsn_of, stream_id
from ..core.log.loss import LIVE, SEEDING, Loss, Marker, marker_loss, parse_marker, stream_loss
from ..core.log.shared import SharedLog
from .redis_script import NEWER_ID
from .redis_snapshots import Snapshots, encode

log = logging.getLogger("server.cluster")

GRACE_S = 2.0  # for the nodes that are up to notice (each looks every 1.25 s at most) and join
BUSY_LIMIT_S = 60.0  # a node busy adding its state this long after the deadline is left behind
POLL_S = 0.1
CHUNK = 5000  # hash fields per script call

_NOW = """
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
"""

# KEYS: the marker, the seeding hash, then every key to delete. ARGV: the marker found ('' for
# none), the seeding marker, the grace in ms. Answer: the marker now.
START = (
    _NOW
    + """
local current = redis.call('GET', KEYS[1]) or ''
if current ~= ARGV[1] then return current end
for i = 3, #KEYS do redis.call('DEL', KEYS[i]) end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[2], 'deadline', now_ms() + tonumber(ARGV[3]))
return ARGV[2]
"""
)

# A topic's snapshot, under the seeding marker, where newer than the one added so far; a new one
# clears the versions of the one it replaces. KEYS: the marker, the snapshot, its ID, the versions
# hash. ARGV: the seeding marker, the ID, the document. Answer: 1 written, 0 not.
ADD_SNAPSHOT = (
    NEWER_ID
    + """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if not newer(ARGV[2], redis.call('GET', KEYS[3])) then return 0 end
redis.call('SET', KEYS[2], ARGV[3])
redis.call('SET', KEYS[3], ARGV[2])
redis.call('DEL', KEYS[4])
return 1
"""
)

# Fields of a hash, under the seeding marker. KEYS: the marker, the hash, the snapshot ID key.
# ARGV: the seeding marker, the mode, the snapshot ID, then field, value, ... Modes: ``s`` set,
# ``v`` set while the snapshot ID is still the given one (the versions of that snapshot), ``n``
# set where absent, ``m`` keep the highest (publisher sequences, compared as decimal text).
# Answer: 1, or 0 when the marker or the snapshot is another now.
ADD_FIELDS = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
local mode = ARGV[2]
if mode == 'v' and redis.call('GET', KEYS[3]) ~= ARGV[3] then return 0 end
for i = 4, #ARGV, 2 do
  local field, value = ARGV[i], ARGV[i + 1]
  if mode == 'n' then
    redis.call('HSETNX', KEYS[2], field, value)
  elseif mode == 'm' then
    local old = redis.call('HGET', KEYS[2], field)
    if not old or #value > #old or (#value == #old and value > old) then
      redis.call('HSET', KEYS[2], field, value)
    end
  else
    redis.call('HSET', KEYS[2], field, value)
  end
end
return 1
"""

# KEYS: the marker, the seeding hash, then per topic its stream, snapshot ID and trim record.
# ARGV: the seeding marker, the live marker, the busy limit in ms. Answer: the marker now.
FINISH = (
    _NOW
    + """
local current = redis.call('GET', KEYS[1]) or ''
if current ~= ARGV[1] then return current end
local now = now_ms()
local deadline = tonumber(redis.call('HGET', KEYS[2], 'deadline') or '0')
if now < deadline then return current end
if now < deadline + tonumber(ARGV[3]) then
  for _, state in ipairs(redis.call('HVALS', KEYS[2])) do
    if state == 'busy' then return current end
  end
end
for i = 3, #KEYS, 3 do
  redis.call('DEL', KEYS[i])
  local id = redis.call('GET', KEYS[i + 1])
  if id then
    -- An empty stream whose next ID is past the snapshot's, and a trim record just above it.
    redis.call('XADD', KEYS[i], id, 'e', '', 'o', '')
    redis.call('XDEL', KEYS[i], id)
    local ms, n = string.match(id, '^(%d+)-(%d+)$')
    local cut = string.format('%d-%d', tonumber(ms), tonumber(n) + 1)
    if tonumber(n) + 1 >= 1048576 then cut = string.format('%d-0', tonumber(ms) + 1) end
    redis.call('SET', KEYS[i + 2], cut)
  end
end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('DEL', KEYS[2])
return ARGV[2]
"""
)


class Seeding:
    """This node's incarnation of the cluster, the checks against it, and re-seeding."""

    def __init__(
        self, redis: Any, broker: Broker, shared: SharedLog, prefix: str, snapshots: Snapshots
    ) -> None:
        self.redis = redis
        self.broker = broker
        self.shared = shared
        self.prefix = prefix
        self.snapshots = snapshots
        self.key = f"{prefix}:incarnation"
        self.hash_key = f"{prefix}:seeding"
        self.mine: Marker | None = None  # the incarnation this node loaded under
        self._start = redis.register_script(START)
        self._add_snapshot = redis.register_script(ADD_SNAPSHOT)
        self._add_fields = redis.register_script(ADD_FIELDS)
        self._finish = redis.register_script(FINISH)

    @property
    def marker(self) -> str:
        return self.mine.encode() if self.mine is not None else ""

    def _topics(self) -> list[str]:
        return [topic.name for topic in self.broker.config.topics]

    # -- checks -------------------------------------------------------------------------------

    def check_marker(self, raw: bytes | None) -> Loss | None:
        return marker_loss(self.mine, parse_marker(raw), self.key)

    async def check(self) -> Loss | None:
        """Whether Redis lost what this node applied: the marker, and the last entry this node
        applied of each topic (still in the stream, or trimmed away)."""
        shared = self.shared
        topics = [topic for topic in self._topics() if shared.position(topic) > 0]
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.get(self.key)
            for topic in topics:
                at = stream_id(shared.position(topic))
                key = self.snapshots.stream_key(topic)
                pipe.xrange(key, min=at, max=at)
                pipe.get(self.snapshots.keys(topic)[2])
                pipe.xrevrange(key, count=1)
            answers = await pipe.execute()
        loss = self.check_marker(answers[0])
        for n, topic in enumerate(topics):
            if loss is not None:
                break
            present, cut, tail = answers[1 + 3 * n : 4 + 3 * n]
            loss = stream_loss(
                topic,
                shared.position(topic),
                bool(present),
                lsn_of(cut.decode()) if cut is not None else None,
                lsn_of(tail[0][0].decode()) if tail else None,
            )
        return loss

    # -- joining and re-seeding -----------------------------------------------------------------

    async def settle(self, starting: bool, stale: bool = False) -> bool:
        """Return once Redis holds a live incarnation, now this node's: take the one there is, or
        start a re-seed (Redis holds no marker, or ``stale``: the one this node loaded under over
        a log that lost entries), add this node's state to one under way (unless ``starting``:
        it has none yet), and finish one that is due. Whether this node's state went into it."""
        added: Marker | None = None
        while True:
            raw = await self.redis.get(self.key)
            found = parse_marker(raw)
            if found is None and starting and await self._holds_data():
                adopted = Marker(LIVE, secrets.token_hex(8))
                if await self.redis.set(self.key, adopted.encode(), nx=True):
                    log.warning("Redis holds the cluster's log without a marker: taking it as it is")
                continue
            if found is None or (stale and found == self.mine):
                seeding = Marker(SEEDING, secrets.token_hex(8))
                wipe = self._wiped_keys()
                await self._start(
                    keys=[self.key, self.hash_key, *wipe],
                    args=[raw or "", seeding.encode(), int(GRACE_S * 1000)],
                )
                stale = False
                continue
            if found.state == LIVE:
                self.mine = found
                return added is not None and found == added.live()
            if not starting and added != found:
                await self._add(found)
                added = found
            keys = [self.key, self.hash_key]
            for topic in self._topics():
                snapshot_id, trimmed = self.snapshots.keys(topic)[1:]
                keys += [self.snapshots.stream_key(topic), snapshot_id, trimmed]
            args = [found.encode(), found.live().encode(), int(BUSY_LIMIT_S * 1000)]
            if parse_marker(await self._finish(keys=keys, args=args)) == found:
                await asyncio.sleep(POLL_S)

    def _wiped_keys(self) -> list[str]:
        # Client name holders too: what is left names sockets that may be gone; the nodes add theirs.
        keys = [self.snapshots.stream_key(PLAIN_STREAM), f"{self.prefix}:names"]
        for topic in self._topics():
            keys += [self.snapshots.stream_key(topic), f"{self.prefix}:versions:{topic}"]
            keys += self.snapshots.keys(topic)
        return keys

    async def _holds_data(self) -> bool:
        keys = [f"{self.prefix}:seqs"] + [self.snapshots.stream_key(t) for t in self._topics()]
        return bool(await self.redis.exists(*keys))

    async def _add(self, seeding: Marker) -> None:
        """Add this node's state to the re-seed under ``seeding``."""
        broker, shared, marker = self.broker, self.shared, seeding.encode()
        await self._fields(marker, self.hash_key, "s", "", [(shared.node, "busy")])
        for topic in self._topics():
            lsn = shared.position(topic)
            if lsn == 0:
                continue  # nothing applied: nothing to add
            # Versions are immutable: the list is the SOW as of ``lsn``, however long encoding takes.
            versions = list(broker.topics[topic].records.values())
            document = await encode(lsn, versions)
            snapshot, snapshot_id, _ = self.snapshots.keys(topic)
            hash_key = f"{self.prefix}:versions:{topic}"
            at = stream_id(lsn)
            if await self._add_snapshot(
                keys=[self.key, snapshot, snapshot_id, hash_key], args=[marker, at, document]
            ):
                pairs = [(v.key, stream_id(v.seq)) for v in versions]
                await self._fields(marker, hash_key, "v", at, pairs, snapshot_id)
        await self._fields(marker, f"{self.prefix}:seqs", "m", "", list(broker.sequences.items()))
        await self._fields(marker, f"{self.prefix}:owners", "n", "", list(broker.name_owners.items()))
        # Who holds each client name now (one name, one connection): the sockets of the nodes.
        holders = [(name, f"{shared.holder(s)} {s.user_id or ''}") for name, s in broker.client_names.items()]
        await self._fields(marker, f"{self.prefix}:names", "n", "", holders)
        await self._fields(marker, self.hash_key, "s", "", [(shared.node, "done")])
        log.warning(
            "cluster node %s added its state to the re-seed of Redis: %s",
            shared.node,
            ", ".join(
                f"{t} up to {stream_id(shared.position(t))}" for t in self._topics() if shared.position(t)
            )
            or "nothing applied",
        )

    async def _fields(
        self, marker: str, key: str, mode: str, at: str, pairs: list[tuple[str, Any]], guard: str = ""
    ) -> None:
        for start in range(0, max(len(pairs), 1), CHUNK):
            args: list[Any] = [marker, mode, at]
            for field, value in pairs[start : start + CHUNK]:
                args += [field, value]
            if not await self._add_fields(keys=[self.key, key, guard or key], args=args):
                return  # the re-seed moved on, or another node's snapshot replaced this one's


class LogLost(Exception):
    """Redis lost what this node applied (raised by the reader, handled by re-seeding)."""

    def __init__(self, loss: Loss) -> None:
        super().__init__(loss.what)
        self.loss = loss
