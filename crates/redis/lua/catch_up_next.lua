-- The end of a catch-up run: does the chain go on, and who carries it?
-- Checked in one step with the dirty set, so a webhook deferred while the
-- run ends either sees the chain (and is drained by its next run) or finds
-- none (and starts one): gate_claim.lua reads the same two keys.
--
-- KEYS[1]   HASH: the dirty set
-- KEYS[2]   STRING: the catch-up chain, '<token>' or 'lease:<token>'
-- KEYS[3]   ZSET: the mall's held events (mall_park.lua): a run releases
--           them before the dirty set, so they keep the chain going too
-- ARGV[1]   the run's token
-- ARGV[2]   the lease in ms (until the next request is known to be queued)
--
-- Returns 0: the set and the held events are empty, the chain ends (deleted if it was this
-- run's); 1: this run carries the chain (it holds the lease: queue the next
-- request, then confirm); 2: another confirmed chain carries it, stop.

local chain = redis.call('GET', KEYS[2])
local mine = chain == ARGV[1] or chain == 'lease:' .. ARGV[1]
if redis.call('HLEN', KEYS[1]) == 0 and redis.call('ZCARD', KEYS[3]) == 0 then
  if mine then
    redis.call('DEL', KEYS[2])
  end
  return 0
end
if chain and not mine and string.sub(chain, 1, 6) ~= 'lease:' then
  return 2
end
-- No chain, this run's own, or a lease whose holder may have died: carry it.
redis.call('SET', KEYS[2], 'lease:' .. ARGV[1], 'PX', ARGV[2])
return 1
