-- Counts a queue's messages: in flight (received, not deleted, within
-- their visibility timeout), delayed (standard queues: sent with a delay
-- not over yet, never received) and the rest, and the oldest one's age.
--
-- KEYS[1]  HASH  cfg     KEYS[2]  HASH  meta    KEYS[3]  ZSET  order
-- KEYS[4]  ZSET  arrival KEYS[5]  ZSET  blocked (see send.lua, receive.lua)
--          All KEYS share the store's hash tag.
--
-- Returns {total, in_flight, oldest_age_ms (-1: empty), delayed} or
-- 'noqueue'. In-flight and delayed messages are the heads (at most 10) of
-- groups blocked beyond now, so this reads at most 10 messages per blocked
-- group; a delayed one has a receive count of 0.
-- (clock.lua is prepended.)

if redis.call('EXISTS', KEYS[1]) == 0 then
  return 'noqueue'
end
local now = now_ms()
local in_flight = 0
local delayed = 0
for _, g in ipairs(redis.call('ZRANGEBYSCORE', KEYS[5], '(' .. now, '+inf')) do
  local members = redis.call('ZRANGEBYLEX', KEYS[3], '[' .. g .. ' ', '(' .. g .. '!', 'LIMIT', 0, 10)
  for _, member in ipairs(members) do
    local m = cjson.decode(redis.call('HGET', KEYS[2], tonumber(string.sub(member, #g + 2))))
    if m.vis > now then
      if m.rc == 0 then delayed = delayed + 1 else in_flight = in_flight + 1 end
    end
  end
end
local age = -1
local oldest = redis.call('ZRANGE', KEYS[4], 0, 0)
if #oldest > 0 then
  age = now - cjson.decode(redis.call('HGET', KEYS[2], oldest[1])).sent
  if age < 0 then age = 0 end
end
return {redis.call('ZCARD', KEYS[4]), in_flight, age, delayed}
