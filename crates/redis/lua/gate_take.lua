-- Clear the caller's pending mark and take the ids that joined it, just
-- before the work starts: an event arriving after this finds no mark, so
-- it is not coalesced into work that has already looked upstream.
--
-- The taken ids are kept under the owner's name until its work is surely
-- over: if the work dies after this call (a killed process, a lost
-- Lambda), the owner's redelivered message comes back here and gets them
-- again, so no joined event is left without an answer.
--
-- KEYS[1]   STRING: the gate, holding the owner's id ('lease:<id>' while
--           the owner's enqueue is unconfirmed: its message may already be
--           here, so the fetch takes that too)
-- KEYS[2]   LIST: ids that joined the pending work (same hash tag)
-- KEYS[3]   LIST: ids this owner has taken (same hash tag)
-- ARGV[1]   the caller's id
-- ARGV[2]   how long KEYS[3] is kept, in ms
--
-- Returns {1, id...} when the caller owned the mark (joiners taken),
-- {0, id...} when the mark is gone (lapsed: joiners are left for the next
-- owner), {-1, id...} when another owner holds it now (its work is still
-- to come); the ids are all this owner has taken, now and before.

local status = 1
local current = redis.call('GET', KEYS[1])
if not current then
  status = 0
elseif current ~= ARGV[1] and current ~= 'lease:' .. ARGV[1] then
  status = -1
else
  redis.call('DEL', KEYS[1])
  local joined = redis.call('LRANGE', KEYS[2], 0, -1)
  redis.call('DEL', KEYS[2])
  for _, id in ipairs(joined) do
    redis.call('RPUSH', KEYS[3], id)
  end
  if #joined > 0 then
    redis.call('PEXPIRE', KEYS[3], ARGV[2])
  end
end
local out = {status}
for i, id in ipairs(redis.call('LRANGE', KEYS[3], 0, -1)) do out[i + 1] = id end
return out
