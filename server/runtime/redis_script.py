"""The one Redis script through which every change enters a cluster's shared log.

Redis runs a script atomically, so what it decides holds for the whole cluster however many
nodes race: a publisher sequence is accepted once (``dup`` otherwise), a change decided against a
record version appends only while that version is still the record's (``conflict`` otherwise,
with the stream's last ID, which the node applies before deciding again), an expiry of a version
already gone appends nothing (``gone``), and a command's entries are appended all or none.

KEYS: the sequences hash, the topic's stream, the topic's versions hash (record key -> the ID of
the entry that wrote the record).
ARGV: client name, sequence, origin, versioned (``1``: a configured topic), then four per entry:
op, record key, expected version (empty: none; ``-``: absent), payload.
Answer: ``{"ok", id...}`` or ``{outcome, detail}``.
"""

PROPOSE = """
local name, seq, origin, versioned = ARGV[1], ARGV[2], ARGV[3], ARGV[4] == '1'
if name ~= '' and seq ~= '' then
  local last = redis.call('HGET', KEYS[1], name)
  if last and tonumber(seq) <= tonumber(last) then return {'dup', last} end
end
for i = 5, #ARGV, 4 do
  local expect = ARGV[i + 2]
  if expect ~= '' then
    local current = redis.call('HGET', KEYS[3], ARGV[i + 1]) or '-'
    if current ~= expect then
      local outcome = 'conflict'
      if ARGV[i] == 'x' then outcome = 'gone' end
      local last = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
      local tail = '0-0'
      if last[1] then tail = last[1][1] end
      return {outcome, tail}
    end
  end
end
if name ~= '' and seq ~= '' then redis.call('HSET', KEYS[1], name, seq) end
local answer = {'ok'}
for i = 5, #ARGV, 4 do
  local id = redis.call('XADD', KEYS[2], '*', 'e', ARGV[i + 3], 'o', origin)
  if versioned then
    if ARGV[i] == 'p' then
      redis.call('HSET', KEYS[3], ARGV[i + 1], id)
    else
      redis.call('HDEL', KEYS[3], ARGV[i + 1])
    end
  end
  answer[#answer + 1] = id
end
return answer
"""

# A client name's claim (PROTOCOL 10: one name, one connection in the cluster; 6.4: refused for
# another user while held, or with [auth] once owned). A holder counts only while its node's
# liveness key lives, so a node that died holding names holds them no longer than that key's
# lifetime: nothing is locked for ever.
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
