-- Pass a gate that lets one caller through per window (SET NX EX in one
-- script, so no two callers can both read "free" and then both write), or
-- mark work as pending so that later callers coalesce into it.
--
-- KEYS[1]   STRING: the gate, holding the value of whoever passed it
-- ARGV[1]   value to store: the passer's id (the owner of a pending mark)
-- ARGV[2]   window (or pending timeout) in ms
--
-- Returns {1} when this caller passed, {0, holder, pttl_ms} when the gate is
-- closed: who passed it, and how long until it reopens on its own.

if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {1}
end
return {0, redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1])}
