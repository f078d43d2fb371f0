-- Stores a refreshed token pair, but only while the stored refresh token
-- is still the one the refresh was made with: a refresh answered after
-- `sluice credentials set` stored a new refresh token must not put the
-- old one back (the person's fix would be silently undone). The layout
-- and expiry are `TokenStore::put`'s, so `TokenStore::get` reads it back
-- the same.
--
-- KEYS[1]   HASH: the stored token ({<tag>}:token:<name>)
-- ARGV[1]   the refresh token the caller read and refreshed with
-- ARGV[2]   access token            ARGV[3]   access_expires_ms
-- ARGV[4]   refresh token           ARGV[5]   refresh_expires_ms (unix ms:
--           the key's expiry, as `put` sets it)
--
-- Returns 1 when stored, 0 when the stored token is another one now, or
-- none (removed since it was read: not brought back); nothing written.

local stored = stored_refresh(KEYS[1])
if stored ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'access', ARGV[2], 'access_expires_ms', ARGV[3], 'refresh', ARGV[4],
  'refresh_expires_ms', ARGV[5])
redis.call('PEXPIREAT', KEYS[1], ARGV[5])
return 1
