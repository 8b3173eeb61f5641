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
