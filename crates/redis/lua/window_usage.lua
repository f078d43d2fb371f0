-- How much of each sliding-window limit is spent now (read only).
--
-- KEYS[i]   LIST of the µs stamps of calls admitted under limit i, oldest
--           first (the limiter's log). All KEYS share one hash tag.
-- ARGV[i]   window of limit i in µs
--
-- Returns {now_us, used_1, free_in_us_1, used_2, free_in_us_2, ...}: the
-- calls inside each window, and how long until the oldest of them leaves
-- it (0 when the window is empty).

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local out = {now}
for i, key in ipairs(KEYS) do
  local window = tonumber(ARGV[i])
  local used, oldest = 0, nil
  for _, stamp in ipairs(redis.call('LRANGE', key, 0, -1)) do
    local at = tonumber(stamp)
    if at > now - window then
      used = used + 1
      if not oldest then oldest = at end
    end
  end
  out[#out + 1] = used
  out[#out + 1] = oldest and (oldest + window - now) or 0
end
return out
