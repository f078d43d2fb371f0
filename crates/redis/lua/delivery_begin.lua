-- Begin one attempt at accepting a delivery (an event id) at ingest. The
-- gate remembers, for the duplicate window, whether the delivery was
-- accepted, or which attempt holds it and until when (its lease). A lease
-- ends on its own, so an attempt that dies (a killed process, a Lambda cut
-- off at its timeout) holds up the sender's retry for one lease at most.
--
-- KEYS[1]   STRING: 'accepted', or 'attempt:<nonce>:<lease end, ms since the epoch>'
-- ARGV[1]   this attempt's nonce (hex, no ':')
-- ARGV[2]   the lease in ms
-- ARGV[3]   how long the gate is kept, in ms (the duplicate window plus the lease)
--
-- Returns {1, value} when this is the delivery's first attempt, {3, value}
-- when it takes over from an earlier attempt whose lease ended (that
-- attempt's outcome is unknown: it may have reached the queue), value being
-- what this attempt wrote; {2, ms} when an earlier attempt's lease still
-- runs for ms; {0, pttl} when the delivery was accepted already.

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local mine = 'attempt:' .. ARGV[1] .. ':' .. string.format('%d', now + tonumber(ARGV[2]))
local current = redis.call('GET', KEYS[1])
if not current then
  redis.call('SET', KEYS[1], mine, 'PX', ARGV[3])
  return {1, mine}
end
if current == 'accepted' then
  return {0, redis.call('PTTL', KEYS[1])}
end
local ends = tonumber(string.match(current, '^attempt:[^:]*:(%d+)$'))
if ends and ends > now then
  return {2, ends - now}
end
-- The lease ended (or the value is from an older sluice): take over.
redis.call('SET', KEYS[1], mine, 'PX', ARGV[3])
return {3, mine}
