-- Sliding-window log limiter: admit a call only if every limit has room, and
-- record it in every log only then. Denied calls leave no trace, so a caller
-- that keeps over-running is not blocked forever (a log that recorded its
-- denials too would stay full while the caller kept retrying).
--
-- KEYS[i]   LIST of the µs timestamps of the latest calls admitted under
--           limit i, oldest first, capped at that limit's max entries.
--           All KEYS share one hash tag.
-- ARGV[1]   cost: how many calls this admission counts as (all recorded with
--           the same timestamp, so same-microsecond calls all count)
-- ARGV[3i-1], ARGV[3i], ARGV[3i+1]
--           limit i: max calls, window µs, min spacing µs (0 = none;
--           the caller guarantees 1 <= cost <= max and spacing <= window)
--
-- Returns {1, now_us, 0} when admitted, {0, now_us, wait_us} when denied.
-- A call at time t is admitted when at most max - cost calls lie in
-- (t - window, t]. Because the log keeps only the latest max calls, that is
-- the case exactly when the (max - cost + 1)-th newest entry is absent or at
-- or before t - window; when it is not, the wait ends when it leaves the
-- window. wait_us is exact: the first moment every limit admits this cost.

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local cost = tonumber(ARGV[1])
local wait = 0
local tails = {}

for i, key in ipairs(KEYS) do
  local max = tonumber(ARGV[3 * i - 1])
  local window = tonumber(ARGV[3 * i])
  local spacing = tonumber(ARGV[3 * i + 1])
  local edge = redis.call('LINDEX', key, cost - max - 1)
  if edge then
    local w = tonumber(edge) + window - now
    if w > wait then wait = w end
  end
  local tail = tonumber(redis.call('LINDEX', key, -1))
  tails[i] = tail
  if tail and tail + spacing > now then
    local w = tail + spacing - now
    if w > wait then wait = w end
  end
end

if wait > 0 then
  return {0, now, wait}
end

for i, key in ipairs(KEYS) do
  local max = tonumber(ARGV[3 * i - 1])
  local window = tonumber(ARGV[3 * i])
  -- Should Redis's clock step back, stamp no earlier than the newest entry,
  -- so each log stays sorted and the limiter errs on the strict side.
  local stamp = now
  if tails[i] and tails[i] > stamp then stamp = tails[i] end
  local s = string.format('%.0f', stamp)
  local stamps = {}
  for j = 1, cost do stamps[j] = s end
  if redis.call('RPUSH', key, unpack(stamps)) > max then
    redis.call('LTRIM', key, -max, -1)
  end
  -- The log is useless once its newest entry leaves the window.
  redis.call('PEXPIRE', key, math.ceil((stamp + window - now) / 1000))
end
return {1, now, 0}
