-- Append one entry to an event's trace, stamped with Redis's clock, and
-- keep the trace for `ttl` after its latest entry.
--
-- KEYS[1]   LIST: the event's trace, oldest first, JSON entries
-- ARGV[1]   stage (e.g. "received", "enqueued", "fetch")
-- ARGV[2]   detail: JSON text
-- ARGV[3]   ttl in ms
-- ARGV[4]   most entries kept (the oldest are dropped beyond it)
--
-- Returns the trace's length.

local t = redis.call('TIME')
local at_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local entry = '{"at_ms":' .. string.format('%.0f', at_ms) .. ',"stage":' .. cjson.encode(ARGV[1])
  .. ',"detail":' .. ARGV[2] .. '}'
local len = redis.call('RPUSH', KEYS[1], entry)
local max = tonumber(ARGV[4])
if len > max then
  redis.call('LTRIM', KEYS[1], -max, -1)
  len = max
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return len
