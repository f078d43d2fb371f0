-- Takes up to max visible messages without waiting: the head of the first
-- ready group, as much of it as the batch has room for, then the next
-- group's, and so on. The first ready group is the ring's front
-- (round-robin), or (SQS FIFO, cfg 'scan' = 'sqs') the ready group with
-- the oldest head among those with a message in the first cfg 'window'
-- messages of the queue; then only messages within that window are taken.
-- Every group served is blocked until its messages' visibility timeout; a
-- blocked group whose moment has passed first rejoins the ready groups,
-- its messages at its head in their original order. A message already
-- received maxReceiveCount times is moved to the tail of its group in the
-- dead-letter queue instead.
--
-- KEYS[1..8]   this queue: cfg, body, meta, order, arrival, ready, gstate,
--              blocked (ZSET group -> ms its last in-flight message becomes
--              visible) -- see send.lua for the others
-- KEYS[9..15]  the dead-letter queue's cfg, body, meta, order, arrival,
--              ready, gstate (only with a redrive policy)
--              All KEYS share the store's hash tag.
-- ARGV[1]      max messages (1..10)
-- ARGV[2]      visibility timeout ms
-- ARGV[3]      the dead-letter queue name the caller believes in, or ''
-- ARGV[4]      this queue's name (recorded on moved messages, for redrive)
-- ARGV[5]      the receive attempt's id ('' for none), as SQS FIFO's
--              ReceiveRequestAttemptId (src/receive_attempt.rs): the same
--              id again answers the messages the first call took, with
--              their visibility reset to ARGV[2] from now, and takes no
--              more (the caller never saw the first answer: the reply was
--              lost) -- as long as every one of them is still in flight
--              from that call, untouched: not deleted, its visibility not
--              changed nor run out, not received again. Otherwise the
--              attempt is spent: see ARGV[7].
-- ARGV[6]      how long an attempt is kept, ms: SQS's 5 minutes for the
--              caller's id; the visibility timeout (at most that) for one
--              of the store's own
-- ARGV[7]      'refuse': a spent attempt answers {'spent'} (the caller's
--              own id: SQS refuses the retry); '': it receives afresh (an
--              id of the store's own, retried after a lost answer: its
--              messages went back to the queue, so it may take again)
-- KEYS[#KEYS-1..#KEYS]  last: rx (HASH attempt id -> '<seq> <receive
--              count> <visible at ms>' of each message it took) and rxx
--              (ZSET attempt id by expiry ms): an attempt is kept for
--              ARGV[6] from the receive that took its messages, and only
--              if it took any; both keys expire ARGV[6] after the latest
--              receive that took any (or later, never earlier)
--
-- Returns {'ok', incarnation, next_visible_in_ms (-1: none in flight),
--          then per message: seq, id, body, group, dedup, sent, rc, fr}
-- or {'noqueue'}, or {'stale'} when the caller's redrive policy is not the
-- stored one (it reloads the settings and calls again), or {'spent'}.
-- (clock.lua, ready_group.lua and move_message.lua are prepended.)

if redis.call('EXISTS', KEYS[1]) == 0 then
  return {'noqueue'}
end
local cfg = redis.call('HMGET', KEYS[1], 'dlq', 'maxrc', 'inc', 'scan', 'window')
if cfg[1] ~= ARGV[3] then
  return {'stale'}
end
local max_receives = tonumber(cfg[2]) or 0
local dlq = ARGV[3] ~= '' and #KEYS >= 15 and max_receives > 0 and redis.call('EXISTS', KEYS[9]) == 1

local now = now_ms()
local max = tonumber(ARGV[1])
local visible_at = now + tonumber(ARGV[2])
local by_head = cfg[4] == 'sqs'
local attempt = ARGV[5] ~= '' and ARGV[5]
local rx, rxx = KEYS[#KEYS - 1], KEYS[#KEYS]

local out = {'ok', cfg[3], -1}
local taken_now = {}
-- Message seq (its meta `meta`, of group g) into the answer.
local function answer(seq, meta, g)
  local n = #out
  out[n + 1] = seq
  out[n + 2] = meta.id
  out[n + 3] = redis.call('HGET', KEYS[2], seq)
  out[n + 4] = g
  out[n + 5] = meta.d
  out[n + 6] = meta.sent
  out[n + 7] = meta.rc
  out[n + 8] = meta.fr
end

local function next_visible()
  local first = redis.call('ZRANGE', KEYS[8], 0, 0, 'WITHSCORES')
  if #first > 0 then
    local wait = tonumber(first[2]) - now
    if wait < 0 then wait = 0 end
    out[3] = wait
  end
  return out
end

local expired = redis.call('ZRANGEBYSCORE', rxx, '-inf', now, 'LIMIT', 0, 256)
if #expired > 0 then
  redis.call('HDEL', rx, unpack(expired))
  redis.call('ZREM', rxx, unpack(expired))
end
-- The same attempt again: what it took, unless it is spent (nil then).
-- Untouched means the same receive count (not received again since) and
-- the same visible-at moment, still ahead (no visibility change, not run
-- out, not deleted). All of a group's in-flight messages are the
-- attempt's (a group is served only when nothing of it is in flight), so
-- the reset moment is the group's blocked moment too.
local function replay(earlier)
  local took = {}
  for seq, rc, vis in string.gmatch(earlier, '(%d+) (%d+) (%d+)') do
    local m = redis.call('HGET', KEYS[3], seq)
    local meta = m and cjson.decode(m)
    if not meta or meta.rc ~= tonumber(rc) or meta.vis ~= tonumber(vis) or meta.vis <= now then
      return nil
    end
    took[#took + 1] = {tonumber(seq), meta}
  end
  local again = {}
  for _, t in ipairs(took) do
    local seq, meta = t[1], t[2]
    meta.vis = visible_at
    redis.call('HSET', KEYS[3], seq, cjson.encode(meta))
    redis.call('ZADD', KEYS[8], visible_at, meta.g)
    answer(seq, meta, meta.g)
    again[#again + 1] = string.format('%d %d %d', seq, meta.rc, visible_at)
  end
  -- Its expiry stays: kept from the receive that took, not the latest retry.
  redis.call('HSET', rx, attempt, table.concat(again, ' '))
  return next_visible()
end

if attempt then
  local earlier = redis.call('HGET', rx, attempt)
  if earlier then
    local replayed = replay(earlier)
    if replayed then return replayed end
    if ARGV[7] == 'refuse' then return {'spent'} end
  end
end

local function heads(g, offset, count)
  return redis.call('ZRANGEBYLEX', KEYS[4], '[' .. g .. ' ', '(' .. g .. '!', 'LIMIT', offset, count)
end

for _, g in ipairs(redis.call('ZRANGEBYSCORE', KEYS[8], '-inf', now)) do
  redis.call('ZREM', KEYS[8], g)
  unblock(KEYS[6], KEYS[7], by_head, g, heads(g, 0, 1)[1])
end

-- SQS FIFO: the sequence number of the last message the scan sees, the
-- window-th in arrival order ('+inf' while the queue holds no more). A
-- move to the dead-letter queue shortens the queue: it is read again then.
local edge = '+inf'
local function find_edge()
  if not by_head then return end
  local last = redis.call('ZRANGE', KEYS[5], tonumber(cfg[5]) - 1, tonumber(cfg[5]) - 1)
  edge = '+inf'
  if #last > 0 then edge = tonumber(last[1]) end
end
find_edge()

local function next_group()
  if not by_head then
    return redis.call('LPOP', KEYS[6])
  end
  local first = redis.call('ZRANGEBYSCORE', KEYS[6], '-inf', edge, 'LIMIT', 0, 1)
  if #first == 0 then return nil end
  redis.call('ZREM', KEYS[6], first[1])
  return first[1]
end

local taken = 0
while taken < max do
  local g = next_group()
  if not g then break end
  local took = 0
  local more = true
  while more and taken < max do
    -- The messages taken so far stay at the group's head: skip them.
    local members = heads(g, took, max - taken)
    more = #members > 0
    for _, member in ipairs(members) do
      local seq = tonumber(string.sub(member, #g + 2))
      if edge ~= '+inf' and seq > edge then
        -- Beyond the window: not seen, nor anything after it.
        more = false
        break
      end
      local meta = cjson.decode(redis.call('HGET', KEYS[3], seq))
      if dlq and meta.rc >= max_receives then
        meta.src = ARGV[4]
        meta.vis = 0
        move_message(g, seq, meta)
        find_edge()
      else
        meta.rc = meta.rc + 1
        if meta.fr == 0 then meta.fr = now end
        meta.vis = visible_at
        redis.call('HSET', KEYS[3], seq, cjson.encode(meta))
        answer(seq, meta, g)
        taken_now[#taken_now + 1] = string.format('%d %d %d', seq, meta.rc, visible_at)
        took = took + 1
        taken = taken + 1
      end
    end
  end
  if took > 0 then
    redis.call('HSET', KEYS[7], g, 'b')
    redis.call('ZADD', KEYS[8], visible_at, g)
  else
    local head = heads(g, 0, 1)
    if #head == 0 then
      redis.call('HDEL', KEYS[7], g)
    elseif by_head then
      -- Nothing taken, messages left: its first ones moved to the
      -- dead-letter queue and the rest lie beyond the window (the range
      -- above returns it only once the window reaches it). Filed by head.
      join_ready(KEYS[6], true, g, tonumber(string.sub(head[1], #g + 2)))
    else
      -- Unreachable in a ring (a group with messages and room in the
      -- batch always gives one); should it happen, keep it and stop.
      redis.call('LPUSH', KEYS[6], g)
      break
    end
  end
end

if attempt and #taken_now > 0 then
  local keep = tonumber(ARGV[6])
  redis.call('HSET', rx, attempt, table.concat(taken_now, ' '))
  redis.call('ZADD', rxx, now + keep, attempt)
  for _, key in ipairs({rx, rxx}) do
    if redis.call('PTTL', key) < keep then redis.call('PEXPIRE', key, keep) end
  end
end
return next_visible()
