-- A held event's snapshot is stored (or, with '', the release only looks):
-- it leaves the held events. When none is left and the mall is releasing,
-- the parking ends: the mall's events go to Cafe24 directly again. Checked
-- in one step with mall_park.lua's, so an event either joins the held
-- events before the end (and is released) or finds no hold.
--
-- KEYS[1]   HASH: the parking (key `hold`), {state, reason, since}
-- KEYS[2]   ZSET: held event ids -> arrival sequence
-- KEYS[3]   HASH: held event id -> item JSON
-- KEYS[4]   STRING: the last arrival sequence handed out
-- ARGV[1]   the event id released, or ''
--
-- Returns {events still held, 1 if the parking ended now else 0}.

if ARGV[1] ~= '' then
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('HDEL', KEYS[3], ARGV[1])
end
local left = redis.call('ZCARD', KEYS[2])
if left == 0 and redis.call('HGET', KEYS[1], 'state') == 'releasing' then
  redis.call('DEL', KEYS[1], KEYS[3], KEYS[4])
  return {0, 1}
end
return {left, 0}
