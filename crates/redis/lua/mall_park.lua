-- A shop event meets its mall's parking: while the mall is parked (Cafe24
-- refused its refresh token), or while events held for it are still
-- being released, the event joins the mall's held events, in arrival
-- order, instead of being fetched. `park` also parks the mall.
--
-- KEYS[1]   HASH: the parking (key `hold`), {state = parked | releasing, reason, since (ms)}
-- KEYS[2]   ZSET: held event ids -> arrival sequence
-- KEYS[3]   HASH: held event id -> the item as the state machine gave it (JSON)
-- KEYS[4]   STRING: the last arrival sequence handed out
-- ARGV[1]   'check' (hold only if held already) or 'park' (park, then hold)
-- ARGV[2]   the event id to hold; '' holds nothing (a catch-up run parking)
-- ARGV[3]   the item JSON
-- ARGV[4]   why the mall is parked (with 'park')
--
-- Returns {held (0/1), newly parked (0/1), events held now}. The same event
-- held twice (its message redelivered) keeps its first place.

local state = redis.call('HGET', KEYS[1], 'state')
local newly = 0
if ARGV[1] == 'park' then
  if state ~= 'parked' then
    newly = 1
    local now = redis.call('TIME')
    local ms = now[1] * 1000 + math.floor(now[2] / 1000)
    redis.call('HSET', KEYS[1], 'state', 'parked', 'reason', ARGV[4], 'since', ms)
  end
  state = 'parked'
end
local count = redis.call('ZCARD', KEYS[2])
if not state and count == 0 then
  return {0, 0, 0}
end
if ARGV[2] == '' then
  return {0, newly, count}
end
if not redis.call('ZSCORE', KEYS[2], ARGV[2]) then
  local seq = redis.call('INCR', KEYS[4])
  redis.call('ZADD', KEYS[2], seq, ARGV[2])
  redis.call('HSET', KEYS[3], ARGV[2], ARGV[3])
  count = count + 1
end
return {1, newly, count}
