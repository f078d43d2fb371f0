-- Buffer one row for its sheet's next flush, once: a redelivered row finds
-- its marker and is not buffered again. With flow control per sheet (see
-- crates/redis/src/sheet_flow.rs) the row also stops counting as queued,
-- and once no counted row of the sheet is left in the queue, the sheet's
-- overflow (rows held back at ingest, all of which arrived after every
-- counted row) joins the end of the buffer, in order, in this same step
-- (overflow_into_buffer.lua, loaded in front of this script).
--
-- KEYS[1]   LIST: the sheet's buffer, rows as JSON, oldest first
--           (owner: the sheet's flush, which moves rows out)
-- KEYS[2]   STRING: the row's marker (same hash tag)
-- KEYS[3]   ZSET: the sheet's rows counted in the queue, row id -> ms
-- KEYS[4]   LIST: the sheet's overflow, rows as JSON, oldest first
-- ARGV[1]   the row as JSON
-- ARGV[2]   marker TTL in ms (longer than any redelivery)
-- ARGV[3]   the row id
-- ARGV[4]   ms after which a counted row no longer counts
--
-- Returns {added, buffer length, moved row...}: added 1 when buffered, 0
-- for a row already buffered (or held in the overflow); the rows that
-- moved from the overflow into the buffer, oldest first.

local added = 0
if redis.call('SET', KEYS[2], '1', 'NX', 'PX', ARGV[2]) then
  redis.call('RPUSH', KEYS[1], ARGV[1])
  added = 1
end
redis.call('ZREM', KEYS[3], ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now - tonumber(ARGV[4]))
local out = {added, 0}
if redis.call('ZCARD', KEYS[3]) == 0 then
  overflow_into_buffer(KEYS[4], KEYS[1], out)
end
out[2] = redis.call('LLEN', KEYS[1])
return out
