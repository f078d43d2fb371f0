-- Shared by credential_reject.lua and token_put_if_refresh.lua (prepended:
-- a script runs alone and cannot call another).
--
-- stored_refresh(key): the refresh token of the token hash at `key`, or
-- false when there is none. A hash missing a field is no token, as
-- TokenStore::get reads it.
local function stored_refresh(key)
  local fields = redis.call('HMGET', key, 'access', 'access_expires_ms', 'refresh', 'refresh_expires_ms')
  for i = 1, 4 do
    if not fields[i] then
      return false
    end
  end
  return fields[3]
end

