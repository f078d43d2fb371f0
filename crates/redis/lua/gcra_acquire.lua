-- GCRA leaky bucket: take n units, or learn exactly how long until they fit.
--
-- KEYS[1]   STRING: the theoretical arrival time (TAT), µs since the epoch.
--           The bucket's level is (TAT - now) / interval; an absent key is an
--           empty bucket, and the key expires exactly when the bucket empties.
-- ARGV[1]   interval: µs one unit takes to drain (1 / drain rate)
-- ARGV[2]   capacity: units the bucket holds
-- ARGV[3]   n: units to take (the caller guarantees they fit under the margin)
-- ARGV[4]   margin: µs of the bucket's room left unused, against calls that
--           reach the upstream later than they were admitted here
--
-- Returns {1, now_us, 0} when taken, {0, now_us, wait_us} when not (the same
-- shape as sliding_window.lua).

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local capacity = tonumber(ARGV[2])
local n = tonumber(ARGV[3])
local margin = tonumber(ARGV[4])

local tat = tonumber(redis.call('GET', KEYS[1]) or 0)
if tat < now then tat = now end
local new_tat = tat + n * interval
local excess = new_tat - now - capacity * interval + margin
if excess > 0 then
  return {0, now, excess}
end
redis.call('SET', KEYS[1], string.format('%.0f', new_tat), 'PX', math.ceil((new_tat - now) / 1000))
return {1, now, 0}
