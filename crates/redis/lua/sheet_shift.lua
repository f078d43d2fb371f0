-- Move every row of one list to another, keeping their order: parking the
-- in-flight rows (a rejected credential, a missing sheet) behind rows
-- parked before them, or redriving parked rows ahead of the buffer, so a
-- sheet's rows still land in arrival order.
--
-- KEYS[1]   LIST: from (emptied)
-- KEYS[2]   LIST: to
-- KEYS[3]   STRING: the in-flight state, deleted with the move
-- ARGV[1]   'back' (after what `to` holds) or 'front' (before it)
--
-- Returns how many rows moved.

local rows = redis.call('LRANGE', KEYS[1], 0, -1)
if ARGV[1] == 'front' then
  for i = #rows, 1, -1 do
    redis.call('LPUSH', KEYS[2], rows[i])
  end
else
  for first = 1, #rows, 1000 do
    redis.call('RPUSH', KEYS[2], unpack(rows, first, math.min(first + 999, #rows)))
  end
end
redis.call('DEL', KEYS[1], KEYS[3])
return #rows
