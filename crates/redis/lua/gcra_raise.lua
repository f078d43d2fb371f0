-- Raise a GCRA bucket's TAT to at least now + offset; never lower it. Used to
-- fold an upstream's own report back in (`X-Api-Call-Limit: used/capacity`)
-- and to hold callers back after a 429; with offset 0 it only reads the level.
-- Because it only ever raises, a late or out-of-order report cannot loosen
-- the bucket.
--
-- KEYS[1]   STRING: the bucket's TAT in µs (see gcra_acquire.lua)
-- ARGV[1]   offset: µs beyond now that the TAT must at least reach
--
-- Returns {now_us, backlog_us}: backlog_us / interval is the level now.

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local offset = tonumber(ARGV[1])

local tat = tonumber(redis.call('GET', KEYS[1]) or 0)
local floor = now + offset
if offset > 0 and floor > tat then
  redis.call('SET', KEYS[1], string.format('%.0f', floor), 'PX', math.ceil(offset / 1000))
  tat = floor
end
if tat < now then tat = now end
return {now, tat - now}
