-- The consumer lease of a store (see consumer_lease.rs): takes, renews or
-- gives up the one key that says which process consumes the store's
-- queues. Its expiry is the lease's: a holder that stops renewing loses
-- it after the TTL with nothing else to clean up.
--
-- KEYS[1]  STRING  the lease: '<host>|<pid>|<token>' of its holder
-- ARGV[1]  'take' | 'renew' | 'release'
-- ARGV[2]  the caller, as stored
-- ARGV[3]  TTL ms ('take', 'renew')
-- ARGV[4]  'take' only: a holder the caller verified dead, which it may
--          replace at once ('' for none)
--
-- Returns {'ok'} when the caller holds the lease afterwards ('release':
-- when it no longer does), or {'held', holder, pttl_ms} when someone else
-- holds it ('take'), or {'lost', holder or ''} ('renew': it lapsed or was
-- taken over).

local holder = redis.call('GET', KEYS[1])
local op = ARGV[1]
if op == 'take' then
  if (not holder) or holder == ARGV[2] or (ARGV[4] ~= '' and holder == ARGV[4]) then
    redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
    return {'ok'}
  end
  return {'held', holder, redis.call('PTTL', KEYS[1])}
elseif op == 'renew' then
  if holder == ARGV[2] then
    redis.call('PEXPIRE', KEYS[1], ARGV[3])
    return {'ok'}
  end
  return {'lost', holder or ''}
elseif op == 'release' then
  if holder == ARGV[2] then
    redis.call('DEL', KEYS[1])
  end
  return {'ok'}
end
return redis.error_reply('lease.lua: unknown op ' .. tostring(op))
