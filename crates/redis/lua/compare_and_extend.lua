-- Extend a lock's lease only if the caller still holds it.
--
-- KEYS[1]   STRING: the lock, holding its holder's token
-- ARGV[1]   the caller's token
-- ARGV[2]   new lease in ms, counted from now
--
-- Returns 1 when extended, 0 when the lock is gone (expired), -1 when another
-- holder has it now.
--
-- The holder check is compare_and_delete.lua's, written again: a script
-- runs alone and cannot call another, and one script with a delete-or-
-- extend switch would be harder to read than the six lines twice.

local current = redis.call('GET', KEYS[1])
if not current then
  return 0
end
if current ~= ARGV[1] then
  return -1
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
