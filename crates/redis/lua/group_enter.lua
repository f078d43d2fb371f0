-- The queue just took an event: count it as pending in its
-- FIFO group, unless the queue would drop it as a duplicate (SQS FIFO
-- forgets a deduplication id five minutes after its send).
--
-- KEYS[1]   ZSET the group's pending events: event id -> µs of its send
-- KEYS[2]   ZSET waiting groups: group -> µs of its oldest pending send
-- KEYS[3]   ZSET groups seen: group -> µs of its latest activity
-- KEYS[4]   HASH group -> what the group is (JSON)
-- KEYS[5]   ZSET events done lately: event id -> µs of its send
--           All KEYS share the group's shard tag {groups:<n>}.
-- ARGV[1]   group key
-- ARGV[2]   what the group is (JSON)
-- ARGV[3]   event id
-- ARGV[4]   retention µs: nothing older can still be in a queue
-- ARGV[5]   the queue's deduplication window µs
--
-- Returns the group's pending count, or -1 when the event was done and its
-- send is still inside the deduplication window (the queue drops it).

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
-- µs stamps stay exact in a double; written with %.0f, never as 1.7e+15.
local function us(n) return string.format('%.0f', n) end
local group, id = ARGV[1], ARGV[3]
local retention, dedup = tonumber(ARGV[4]), tonumber(ARGV[5])

redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', us(now - dedup))
local done = redis.call('ZSCORE', KEYS[5], id)
if done then
  return -1
end

redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', us(now - retention))
redis.call('ZADD', KEYS[1], 'NX', us(now), id)
local head = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
redis.call('ZADD', KEYS[2], head[2], group)
redis.call('ZADD', KEYS[3], us(now), group)
redis.call('HSET', KEYS[4], group, ARGV[2])

-- Groups idle past the retention leave the index (their pending sets
-- have expired on their own by then).
local idle = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', us(now - retention), 'LIMIT', 0, 100)
for _, g in ipairs(idle) do
  redis.call('ZREM', KEYS[3], g)
  redis.call('ZREM', KEYS[2], g)
  redis.call('HDEL', KEYS[4], g)
end

for i = 1, 4 do
  redis.call('PEXPIRE', KEYS[i], math.ceil(retention / 1000))
end
redis.call('PEXPIRE', KEYS[5], math.ceil(dedup / 1000))
return redis.call('ZCARD', KEYS[1])
