-- Shared by compare_and_delete.lua and compare_and_extend.lua (prepended:
-- a script runs alone and cannot call another).
--
-- holder_check(key, expected): nil when `key` holds `expected` (the caller
-- still owns it); else what the script returns: 0 when the key is gone
-- (expired), -1 when it holds another value (someone else owns it now).
local function holder_check(key, expected)
  local current = redis.call('GET', key)
  if not current then
    return 0
  end
  if current ~= expected then
    return -1
  end
  return nil
end

