-- Buffer one row for its sheet's next flush, once: a redelivered row finds
-- its marker and is not buffered again.
--
-- KEYS[1]   LIST: the sheet's buffer, rows as JSON, oldest first
--           (owner: the sheet's flush, which moves rows out)
-- KEYS[2]   STRING: the row's marker (same hash tag)
-- ARGV[1]   the row as JSON
-- ARGV[2]   marker TTL in ms (longer than any redelivery)
--
-- Returns {1, buffer length} when buffered, {0, buffer length} for a row
-- already buffered.

if not redis.call('SET', KEYS[2], '1', 'NX', 'PX', ARGV[2]) then
  return {0, redis.call('LLEN', KEYS[1])}
end
return {1, redis.call('RPUSH', KEYS[1], ARGV[1])}
