-- Mark work on a key as pending, or join the work already pending: the
-- first caller's id is stored in the gate; a later caller's id is appended
-- to the key's list of joiners, which the owner takes when its work starts
-- (gate_take.lua), so the work can say which events it answered.
--
-- KEYS[1]   STRING: the gate, holding the owner's id
-- KEYS[2]   LIST: ids that joined the pending work (same hash tag)
-- ARGV[1]   the caller's id
-- ARGV[2]   pending timeout in ms (the mark lapses after it)
--
-- Returns {1} when the caller now owns the mark, {0, owner, pttl_ms} when
-- it joined the owner's pending work.

if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {1}
end
local pttl = redis.call('PTTL', KEYS[1])
redis.call('RPUSH', KEYS[2], ARGV[1])
-- Joiners must stay readable as long as some owner's work may still start.
redis.call('PEXPIRE', KEYS[2], pttl + tonumber(ARGV[2]))
return {0, redis.call('GET', KEYS[1]), pttl}
