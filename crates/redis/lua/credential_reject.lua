-- Marks a Google credential rejected, but only while its stored token is
-- the one the refused call read: a flush whose call with the old token
-- fails after `sluice credentials set` stored a new one must not mark the
-- new one rejected (nothing would redrive its rows again).
--
-- KEYS[1]   STRING: the credential's rejection ({gcred:<id>}:rejected:)
-- KEYS[2]   HASH: its stored token ({gcred:<id>}:token:google)
-- ARGV[1]   why it was rejected
-- ARGV[2]   the refresh token the caller read; absent when it found no
--           token stored (then it is rejected only while there is none)
--
-- Returns 1 when marked rejected, 0 when the stored token is another one
-- now (the rejection left as it was).

local stored = stored_refresh(KEYS[2])
if stored ~= (ARGV[2] or false) then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1])
return 1
