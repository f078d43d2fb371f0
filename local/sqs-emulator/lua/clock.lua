-- Prepended to every script that reads the time: Redis's clock, in ms
-- since the epoch. Every caller's messages are stamped by the one clock of
-- the server that stores them, whatever the callers' own clocks say.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

