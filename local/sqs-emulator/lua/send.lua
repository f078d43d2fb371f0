-- Enqueues messages in order, dropping those whose deduplication id was
-- sent in the last five minutes (they are accepted with the first one's
-- answer and never delivered).
--
-- KEYS[1]  HASH  cfg: settings and 'seq', the last sequence number
-- KEYS[2]  HASH  body: seq -> body
-- KEYS[3]  HASH  meta: seq -> JSON {id, g, d, sent, rc, fr, vis[, src]}
-- KEYS[4]  ZSET  order: '<group> <seq:020>' (score 0), so a lex range is
--                one group's messages in order (' ' sorts below every
--                character an SQS group id may contain)
-- KEYS[5]  ZSET  arrival: seq by seq (oldest first)
-- KEYS[6]  LIST | ZSET  ready: the groups that can be served (a ring, or
--                by head sequence number: see ready_group.lua)
-- KEYS[7]  HASH  gstate: group -> 'r' (in ready) | 'b' (blocked)
-- KEYS[8]  HASH  dedup: deduplication id -> '<message id> <seq:020>'
-- KEYS[9]  ZSET  dedupx: deduplication id by expiry ms
--          All KEYS share the store's hash tag.
-- ARGV[1]  dedup window ms
-- ARGV[4i-2], ARGV[4i-1], ARGV[4i], ARGV[4i+1]
--          message i: message id (drawn by the caller), group, dedup id, body
--
-- Returns {'ok', '<message id> <seq>' per message} or {'noqueue'}.
-- (clock.lua and ready_group.lua are prepended.)

if redis.call('EXISTS', KEYS[1]) == 0 then
  return {'noqueue'}
end
local now = now_ms()
local window = tonumber(ARGV[1])
local by_head = scans_by_head(KEYS[1])

local expired = redis.call('ZRANGEBYSCORE', KEYS[9], '-inf', now, 'LIMIT', 0, 256)
if #expired > 0 then
  redis.call('HDEL', KEYS[8], unpack(expired))
  redis.call('ZREM', KEYS[9], unpack(expired))
end

local out = {'ok'}
for i = 2, #ARGV, 4 do
  local id, g, d, body = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local expires = tonumber(redis.call('ZSCORE', KEYS[9], d))
  if expires and expires > now then
    out[#out + 1] = redis.call('HGET', KEYS[8], d)
  else
    local seq = redis.call('HINCRBY', KEYS[1], 'seq', 1)
    local padded = string.format('%020d', seq)
    redis.call('HSET', KEYS[2], seq, body)
    redis.call('HSET', KEYS[3], seq, cjson.encode({id = id, g = g, d = d, sent = now, rc = 0, fr = 0, vis = 0}))
    redis.call('ZADD', KEYS[4], 0, g .. ' ' .. padded)
    redis.call('ZADD', KEYS[5], seq, seq)
    local answer = id .. ' ' .. padded
    redis.call('HSET', KEYS[8], d, answer)
    redis.call('ZADD', KEYS[9], now + window, d)
    if redis.call('HSETNX', KEYS[7], g, 'r') == 1 then
      join_ready(KEYS[6], by_head, g, seq)
    end
    out[#out + 1] = answer
  end
end
-- The dedup keys outlive no id they hold.
redis.call('PEXPIRE', KEYS[8], window)
redis.call('PEXPIRE', KEYS[9], window)
return out
