-- Clear the caller's pending mark and take the ids that joined it, just
-- before the work starts: an event arriving after this finds no mark, so
-- it is not coalesced into work that has already looked upstream.
--
-- KEYS[1]   STRING: the gate, holding the owner's id ('lease:<id>' while
--           the owner's enqueue is unconfirmed: its message may already be
--           here, so the fetch takes that too)
-- KEYS[2]   LIST: ids that joined the pending work (same hash tag)
-- ARGV[1]   the caller's id
--
-- Returns {1, joiner...} when the caller owned the mark (joiners taken),
-- {0} when the mark is gone (lapsed: joiners are left for the next owner),
-- {-1} when another owner holds it now (its work is still to come).

local current = redis.call('GET', KEYS[1])
if not current then
  return {0}
end
if current ~= ARGV[1] and current ~= 'lease:' .. ARGV[1] then
  return {-1}
end
redis.call('DEL', KEYS[1])
local joined = redis.call('LRANGE', KEYS[2], 0, -1)
redis.call('DEL', KEYS[2])
local out = {1}
for i, id in ipairs(joined) do out[i + 1] = id end
return out
