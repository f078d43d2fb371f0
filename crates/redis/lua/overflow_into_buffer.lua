-- Shared by sheet_admit.lua and sheet_buffer.lua, which are loaded with
-- this file in front of them (crates/redis/src/scripts.rs): both move a
-- sheet's overflow into its buffer, and the two moves must be the same.
-- No KEYS or ARGV of its own: the caller passes its keys.
--
-- overflow_into_buffer(overflow, buffer, out) moves every row of the LIST
-- `overflow` to the end of the LIST `buffer`, in order, deletes
-- `overflow`, and appends the moved rows to the table `out`.

local function overflow_into_buffer(overflow, buffer, out)
  local rows = redis.call('LRANGE', overflow, 0, -1)
  -- RPUSH in chunks: Lua's stack bounds one call's arguments.
  for first = 1, #rows, 1000 do
    redis.call('RPUSH', buffer, unpack(rows, first, math.min(first + 999, #rows)))
  end
  redis.call('DEL', overflow)
  for _, row in ipairs(rows) do out[#out + 1] = row end
end

