-- Take a lock with SET NX PX and hand out a fencing number that strictly
-- increases per lock name, so a storage write can refuse a holder whose lease
-- has already passed to someone else.
--
-- KEYS[1]   STRING: the lock, holding its holder's random token
-- KEYS[2]   STRING: the last fencing number handed out for this lock
-- ARGV[1]   token (random, 128 bits, hex)
-- ARGV[2]   lease in ms
-- ARGV[3]   how long the fence key outlives its last use, in ms
--
-- Returns {1, fence} when taken, {0, pttl_ms} when held by someone else.
-- The fence is max(last + 1, now in µs): it follows Redis's clock, so it
-- keeps increasing even after the fence key has expired.

if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {0, redis.call('PTTL', KEYS[1])}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local fence = tonumber(redis.call('GET', KEYS[2]) or 0) + 1
if now > fence then fence = now end
redis.call('SET', KEYS[2], string.format('%.0f', fence), 'PX', ARGV[3])
return {1, fence}
