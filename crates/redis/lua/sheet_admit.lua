-- Flow control per sheet at ingest (see crates/redis/src/sheet_flow.rs):
-- let a row through to the FIFO queue, counted, or hold it in the sheet's
-- overflow. A row is let through only while the sheet has fewer than
-- ARGV[3] rows counted in the queue and nothing in its overflow, so every
-- row in the queue arrived before every row in the overflow; the buffer
-- step moves the overflow into the buffer once the last counted row is
-- buffered (sheet_buffer.lua). When no row counts any more but the
-- overflow is not empty (counted rows lapsed past the horizon, or their
-- sends failed), nothing in the queue can come before the overflow: it
-- joins the buffer here first (overflow_into_buffer.lua, loaded in front
-- of this script), and the row let through now asks for the flush from
-- its buffer step.
--
-- KEYS[1]   ZSET: the sheet's rows counted in the queue, row id -> ms
--           counted (owner: the buffer step; TTL: the horizon)
-- KEYS[2]   LIST: the sheet's overflow, rows as JSON, oldest first
-- KEYS[3]   LIST: the sheet's buffer
-- KEYS[4]   STRING: the row's marker, as the buffer step sets it
-- ARGV[1]   the row id
-- ARGV[2]   the row as JSON, as the buffer holds it
-- ARGV[3]   rows counted in the queue from which rows are held back
-- ARGV[4]   ms after which a counted row no longer counts (its message
--           died in the dead-letter queue, or its step before leaving)
-- ARGV[5]   marker TTL in ms
--
-- Returns {0} a duplicate (the row is buffered or held already); {1,
-- moved row...} send the row's message (counted; the rows that moved from
-- the overflow into the buffer first, oldest first); {2, overflow length}
-- held in the overflow.

if redis.call('EXISTS', KEYS[4]) == 1 then
  return {0}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[4]))
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  -- Counted by an earlier attempt whose message is in the queue or was
  -- never sent (that attempt died): send it again, keeping its place;
  -- the queue drops a copy as a duplicate.
  return {1}
end
local out = {1}
local queued = redis.call('ZCARD', KEYS[1])
local held = redis.call('LLEN', KEYS[2])
if queued == 0 and held > 0 then
  overflow_into_buffer(KEYS[2], KEYS[3], out)
  held = 0
end
if held == 0 and queued < tonumber(ARGV[3]) then
  redis.call('ZADD', KEYS[1], now, ARGV[1])
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
  return out
end
redis.call('SET', KEYS[4], '1', 'PX', ARGV[5])
return {2, redis.call('RPUSH', KEYS[2], ARGV[2])}
