-- Counts an event's message as in the queue for its mall's flow control
-- (gate_claim.lua decides on the count). Entries leave when the event's
-- last step runs (ZREM), or by age in gate_claim.lua.
--
-- KEYS[1]   ZSET: the mall's messages in the queue, event id -> ms sent
-- ARGV[1]   the event id
-- ARGV[2]   ms the set lives after its latest change
--
-- Returns the set's size.

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return redis.call('ZCARD', KEYS[1])
