-- Shared by the scripts that write an event's trace (loaded before them:
-- EVAL has no other way to share code). One entry, stamped with Redis's
-- clock, appended to the trace list `key`; at most `max` entries kept
-- (the oldest dropped), and the trace kept for `ttl_ms` after its latest
-- entry. `detail` is JSON text. Returns the trace's length.

local function trace_append(key, stage, detail, ttl_ms, max)
  local t = redis.call('TIME')
  local at_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local entry = '{"at_ms":' .. string.format('%.0f', at_ms) .. ',"stage":' .. cjson.encode(stage)
    .. ',"detail":' .. detail .. '}'
  local len = redis.call('RPUSH', key, entry)
  max = tonumber(max)
  if len > max then
    redis.call('LTRIM', key, -max, -1)
    len = max
  end
  redis.call('PEXPIRE', key, ttl_ms)
  return len
end
