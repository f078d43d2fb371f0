-- Delete a key only if it still holds the value the caller put there: a lock
-- released by its holder, a pending mark cleared by its owner.
--
-- KEYS[1]   STRING: the lock or mark
-- ARGV[1]   the value the caller expects (its token or owner id)
--
-- Returns 1 when deleted, 0 when the key is gone (expired), -1 when it holds
-- another value (someone else owns it now).
-- (holder_check.lua is prepended.)

local refused = holder_check(KEYS[1], ARGV[1])
if refused then
  return refused
end
redis.call('DEL', KEYS[1])
return 1
