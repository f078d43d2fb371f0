-- Confirm a pending mark once the owner's message is in the queue: from
-- now on other events may join its fetch (gate_claim.lua).
--
-- KEYS[1]   STRING: the mark
-- ARGV[1]   the owner's event id
-- ARGV[2]   the pending timeout in ms
--
-- Returns 1 when confirmed; 0 when the lease is gone: the fetch already
-- took it (gate_take.lua), or it ended and another event holds the mark.

if redis.call('GET', KEYS[1]) == 'lease:' .. ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
