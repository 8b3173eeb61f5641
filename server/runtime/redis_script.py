"""The Redis scripts of a cluster: the one through which every change enters the shared log, and
the client name claims.

Redis runs a script atomically, so what it decides holds for the whole cluster however many
nodes race: a publisher sequence is accepted once (``dup`` otherwise), a change decided against a
record version appends only while that version is still the record's (``conflict`` otherwise,
with the stream's last ID, which the node applies before deciding again), an expiry of a version
already gone appends nothing (``gone``), and a command's entries are appended all or none.

``PROPOSE`` takes a node's whole batch of proposals in one call (one command for Redis to parse
and one for redis-py to build, however many publishes), deciding them one after the other.
KEYS: the sequences hash, then per topic of the batch its stream and its versions hash (record
key -> the ID of the entry that wrote the record), then the cluster's marker key. Each entry
appended holds its payload (``e``), its origin (``o``) and the ID of the entry before it (``p``:
redis_chain.py).
ARGV: the marker the node loaded under (``core/log/loss.py``: when Redis holds another, or none,
it lost the log or is being re-seeded, and every proposal is answered ``{"lost", marker}`` with
nothing appended), then per proposal: its topic's place among the KEYS pairs (1-based), client
name, sequence, origin, versioned (``1``: a configured topic), entry count, then four per entry:
op, record key, expected version (empty: none; ``-``: absent), payload. A transaction (op ``t``,
docs/protocol.md, Transactions) is one entry whose record key is the lines ``p<key>`` or ``d<key>``
(the records it writes or deletes) and whose expected version is the lines ``<key>=<version>``.
Answer: per proposal ``{"ok", id...}`` or ``{outcome, detail}``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.broker.changelog import PLAIN_STREAM, Proposal

PROPOSE = """
-- Sequences run to 2^64 - 1, past what a Lua number holds exactly: compared as decimal text.
local function not_above(seq, highest)
  if #seq ~= #highest then return #seq < #highest end
  return seq <= highest
end
-- The ID of a stream's last entry ('' when it has none). Each entry names the one before it
-- (field p), so a reader knows it missed none: a trim removes entries a node that was away had
-- not read yet (redis_chain.py).
local tails = {}
local function tail(stream)
  if tails[stream] == nil then
    local last = redis.call('XREVRANGE', stream, '+', '-', 'COUNT', 1)
    tails[stream] = (last[1] and last[1][1]) or ''
  end
  return tails[stream]
end
-- An ID whose second part passed 2^20 - 1 (Redis's clock stepped back for a million entries)
-- has no LSN of its own: that entry takes the next millisecond instead.
local function append(stream, payload, origin)
  local prev = tail(stream)
  local id = redis.call('XADD', stream, '*', 'e', payload, 'o', origin, 'p', prev)
  local ms, n = string.match(id, '^(%d+)-(%d+)$')
  if tonumber(n) >= 1048576 then
    redis.call('XDEL', stream, id)
    local next_ms = string.format('%d-0', tonumber(ms) + 1)
    id = redis.call('XADD', stream, next_ms, 'e', payload, 'o', origin, 'p', prev)
  end
  tails[stream] = id
  return id
end
-- Whether a record's version is not the one a change was decided against.
local function replaced(versions, key, expect)
  return (redis.call('HGET', versions, key) or '-') ~= expect
end
local function lines(text)
  return string.gmatch(text, '[^\\n]+')
end
local answers = {}
local marker = redis.call('GET', KEYS[#KEYS]) or ''
local lost = marker ~= ARGV[1]
local i = 2
while i <= #ARGV do
  local pair = tonumber(ARGV[i]) * 2
  local stream, versions = KEYS[pair], KEYS[pair + 1]
  local name, seq, origin, versioned = ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4] == '1'
  local first, last = i + 6, i + 5 + tonumber(ARGV[i + 5]) * 4
  i = last + 1
  local answer = nil
  if lost then answer = {'lost', marker} end
  if not answer and name ~= '' and seq ~= '' then
    local highest = redis.call('HGET', KEYS[1], name)
    if highest and not_above(seq, highest) then answer = {'dup', highest} end
  end
  if not answer then
    for e = first, last, 4 do
      local expect = ARGV[e + 2]
      local stale = false
      if ARGV[e] == 't' then
        for line in lines(expect) do
          local key, version = string.match(line, '^([^=]*)=(.*)$')
          if replaced(versions, key, version) then stale = true end
        end
      else
        stale = expect ~= '' and replaced(versions, ARGV[e + 1], expect)
      end
      if stale then
        local outcome = 'conflict'
        if ARGV[e] == 'x' then outcome = 'gone' end
        local last = tail(stream)
        if last == '' then last = '0-0' end
        answer = {outcome, last}
        break
      end
    end
  end
  if not answer then
    if name ~= '' and seq ~= '' then redis.call('HSET', KEYS[1], name, seq) end
    answer = {'ok'}
    for e = first, last, 4 do
      local id = append(stream, ARGV[e + 3], origin)
      if versioned and ARGV[e] == 't' then
        for line in lines(ARGV[e + 1]) do
          if string.sub(line, 1, 1) == 'p' then
            redis.call('HSET', versions, string.sub(line, 2), id)
          else
            redis.call('HDEL', versions, string.sub(line, 2))
          end
        end
      elseif versioned then
        if ARGV[e] == 'p' then
          redis.call('HSET', versions, ARGV[e + 1], id)
        else
          redis.call('HDEL', versions, ARGV[e + 1])
        end
      end
      answer[#answer + 1] = id
    end
  end
  answers[#answers + 1] = answer
end
return answers
"""


def propose_call(
    prefix: str,
    stream_key: Callable[[str], str],
    origin: Callable[[int], str],
    proposals: list[Proposal],
    marker: str,
) -> tuple[list[str], list[Any]]:
    """The KEYS and ARGV of one ``PROPOSE`` call deciding ``proposals``, in the layout above."""
    keys = [f"{prefix}:seqs"]
    pairs: dict[str, int] = {}
    args: list[Any] = [marker]
    for proposal in proposals:
        topic = proposal.topic
        pair = pairs.get(topic)
        if pair is None:
            pair = pairs[topic] = len(pairs) + 1
            keys += [stream_key(topic), f"{prefix}:versions:{topic}"]
        name, seq = proposal.client_name, proposal.seq
        args += [
            pair,
            name or "",
            "" if seq is None or name is None else seq,
            origin(proposal.token),
            "0" if topic == PLAIN_STREAM else "1",
            len(proposal.entries),
        ]
        for entry, expect in zip(proposal.entries, proposal.expect, strict=True):
            args += [entry.op, entry.key, expect or "", entry.encode()]
    return [*keys, f"{prefix}:incarnation"], args


# A client name's claim (docs/protocol.md, Cluster: one name, one connection in the cluster; Who may
# connect: refused for another user while held, or with [auth] once owned). A holder counts only
# while its node's liveness key lives, so a node that died holding names holds them no longer than
# that key's lifetime: nothing is locked for ever.
# KEYS: the names hash (name -> "<node> <session> <user>"), the owners hash, the sequences hash.
# ARGV: name, holder ("<node> <session>"), user ("" for none), "1" with [auth], the liveness
# key prefix, the channel that tells every node who holds the name now.
# Answer: {"ok", the name's highest sequence} or {"owned" | "in use", user}.
CLAIM = """
local name, holder, user, auth = ARGV[1], ARGV[2], ARGV[3], ARGV[4] == '1'
local owner = redis.call('HGET', KEYS[2], name)
if auth and owner and owner ~= user then return {'owned', owner} end
local current = redis.call('HGET', KEYS[1], name)
if current then
  local node, held_by = string.match(current, '^(%S+) %S+ (.*)$')
  if node and held_by ~= user and redis.call('EXISTS', ARGV[5] .. node) == 1 then
    return {'in use', held_by}
  end
end
redis.call('HSET', KEYS[1], name, holder .. ' ' .. user)
if auth and user ~= '' and not owner then redis.call('HSET', KEYS[2], name, user) end
redis.call('PUBLISH', ARGV[6], name .. '\\n' .. holder)
return {'ok', redis.call('HGET', KEYS[3], name) or '0'}
"""

# A socket that held a name is gone: the name is free, unless another socket claimed it since.
# KEYS: the names hash. ARGV: name, holder.
RELEASE = """
local current = redis.call('HGET', KEYS[1], ARGV[1])
if current and string.sub(current, 1, #ARGV[2] + 1) == ARGV[2] .. ' ' then
  redis.call('HDEL', KEYS[1], ARGV[1])
end
return 1
"""

# Lua: whether stream ID ``id`` comes after ``current`` (``<ms>-<n>`` each; none: it does).
NEWER_ID = """
local function newer(id, current)
  if not current then return true end
  local ms, n = string.match(id, '^(%d+)-(%d+)$')
  local cms, cn = string.match(current, '^(%d+)-(%d+)$')
  ms, n, cms, cn = tonumber(ms), tonumber(n), tonumber(cms), tonumber(cn)
  return ms > cms or (ms == cms and n > cn)
end
"""

# A topic's snapshot, written only when it is newer than the one Redis holds: a node that lags
# must not put back an older snapshot whose stream tail another node's trim has removed; and only
# under the marker the node loaded under (a Redis that lost the log is re-seeded, not written to).
# KEYS: the snapshot, its stream ID, the marker key. ARGV: the stream ID it is as of
# (``<ms>-<n>``), the document, the marker. Answer: 1 written, 0 not newer or not the marker.
WRITE_SNAPSHOT = (
    NEWER_ID
    + """
if redis.call('GET', KEYS[3]) ~= ARGV[3] then return 0 end
if not newer(ARGV[1], redis.call('GET', KEYS[2])) then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('SET', KEYS[2], ARGV[1])
return 1
"""
)

# Trim a topic's stream and record the cut in one step: a node that finds the entry it applied
# last gone from the stream tells a trim (the recorded cut is above it) from a Redis that lost
# it (core/log/loss.py), so the two must never be seen apart. Only under the node's marker.
# KEYS: the stream, its trim record, the marker key. ARGV: the cut (a stream ID), the marker.
TRIM = """
if redis.call('GET', KEYS[3]) ~= ARGV[2] then return 0 end
redis.call('XTRIM', KEYS[1], 'MINID', ARGV[1])
redis.call('SET', KEYS[2], ARGV[1])
return 1
"""
