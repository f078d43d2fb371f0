-- An event left the queue, processed: it is no longer pending in its group,
-- and it is remembered for the deduplication window, so a resend the queue
-- will drop (or an enter later than this) is not counted. The group's
-- oldest pending send moves on.
--
-- KEYS[1]   ZSET the group's pending events: event id -> µs of its send
-- KEYS[2]   ZSET waiting groups: group -> µs of its oldest pending send
-- KEYS[3]   ZSET groups seen: group -> µs of its latest activity
-- KEYS[4]   ZSET events done lately: event id -> µs of its send
--           All KEYS share the group's shard tag {groups:<n>}.
-- ARGV[1]   group key
-- ARGV[2]   event id
-- ARGV[3]   retention µs
-- ARGV[4]   the queue's deduplication window µs
--
-- Returns 1 when the event was pending, 0 when it was not.

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
-- µs stamps stay exact in a double; written with %.0f, never as 1.7e+15.
local function us(n) return string.format('%.0f', n) end
local group, id = ARGV[1], ARGV[2]
local retention, dedup = tonumber(ARGV[3]), tonumber(ARGV[4])

local sent = redis.call('ZSCORE', KEYS[1], id)
if sent then
  redis.call('ZREM', KEYS[1], id)
end
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', us(now - dedup))
local at = tonumber(sent or now)
if at > now - dedup then
  redis.call('ZADD', KEYS[4], us(at), id)
  redis.call('PEXPIRE', KEYS[4], math.ceil(dedup / 1000))
end

local head = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if head[2] then
  redis.call('ZADD', KEYS[2], head[2], group)
  redis.call('PEXPIRE', KEYS[1], math.ceil(retention / 1000))
else
  redis.call('ZREM', KEYS[2], group)
end
if redis.call('ZADD', KEYS[3], 'XX', 'CH', us(now), group) == 1 then
  redis.call('PEXPIRE', KEYS[3], math.ceil(retention / 1000))
end
if sent then
  return 1
end
return 0
