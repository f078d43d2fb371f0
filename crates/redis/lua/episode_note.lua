-- One outcome of something that can fail in a row (a sheet's flush, a
-- mall's fetches): counts the failures in a row and says when an episode
-- starts (the count reaches the threshold) or ends (a success after it
-- started), so each episode raises one alert at each end, however many
-- workers report at once.
--
-- KEYS[1]   STRING: failures in a row
-- KEYS[2]   STRING: '1' while an episode is open
-- ARGV[1]   'fail' or 'ok'
-- ARGV[2]   the threshold (failures in a row that start an episode)
-- ARGV[3]   TTL in ms of both keys, renewed by every failure: an episode
--           nobody reports on for that long lapses without an alert
--
-- Returns 1: an episode started now; 2: one ended now; 0: neither.

if ARGV[1] == 'ok' then
  redis.call('DEL', KEYS[1])
  if redis.call('DEL', KEYS[2]) == 1 then
    return 2
  end
  return 0
end
local ttl = tonumber(ARGV[3])
local count = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ttl)
if count >= tonumber(ARGV[2]) then
  if redis.call('SET', KEYS[2], '1', 'NX', 'PX', ttl) then
    return 1
  end
  redis.call('PEXPIRE', KEYS[2], ttl)
end
return 0
