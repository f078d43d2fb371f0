-- Extend a lock's lease only if the caller still holds it.
--
-- KEYS[1]   STRING: the lock, holding its holder's token
-- ARGV[1]   the caller's token
-- ARGV[2]   new lease in ms, counted from now
--
-- Returns 1 when extended, 0 when the lock is gone (expired), -1 when another
-- holder has it now.
-- (holder_check.lua is prepended.)

local refused = holder_check(KEYS[1], ARGV[1])
if refused then
  return refused
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
