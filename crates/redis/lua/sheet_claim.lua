-- Claim the rows of the sheet's next append: the rows still in flight from
-- an earlier attempt, if any (their fate must be settled first), else the
-- oldest buffered rows up to a count and a byte budget, moved atomically
-- to the in-flight list. Rows are moved before the call, so a crash at any
-- point leaves every row either buffered or in flight, never lost.
--
-- KEYS[1]   LIST: the buffer
-- KEYS[2]   LIST: the rows in flight (owner: the flush)
-- KEYS[3]   STRING: whether the in-flight rows may have been appended:
--           'unknown' from the claim until the call's outcome is known,
--           'unsent' when it is known they were not (owner: the flush)
-- ARGV[1]   most rows
-- ARGV[2]   most bytes of row JSON (at least one row is always taken)
--
-- Returns {state, row...}: state 'fresh' for newly claimed rows, 'unsent'
-- for rows in flight known not appended, 'unknown' for rows in flight that
-- may have been appended (verify before sending again), 'empty' for none.

if redis.call('LLEN', KEYS[2]) > 0 then
  local state = redis.call('GET', KEYS[3]) or 'unknown'
  local out = {state}
  for i, row in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do out[i + 1] = row end
  redis.call('SET', KEYS[3], 'unknown')
  return out
end
local max_rows = tonumber(ARGV[1])
local max_bytes = tonumber(ARGV[2])
local rows = redis.call('LRANGE', KEYS[1], 0, max_rows - 1)
if #rows == 0 then
  return {'empty'}
end
local take, bytes = 0, 0
for _, row in ipairs(rows) do
  if take > 0 and bytes + #row > max_bytes then break end
  take = take + 1
  bytes = bytes + #row
end
redis.call('LTRIM', KEYS[1], take, -1)
local out = {'fresh'}
-- RPUSH in chunks: Lua's stack bounds one call's arguments.
for first = 1, take, 1000 do
  local chunk = {}
  for i = first, math.min(first + 999, take) do
    chunk[#chunk + 1] = rows[i]
    out[#out + 1] = rows[i]
  end
  redis.call('RPUSH', KEYS[2], unpack(chunk))
end
redis.call('SET', KEYS[3], 'unknown')
return out
