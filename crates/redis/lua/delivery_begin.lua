-- Begin one attempt at accepting a delivery (an event id) at ingest. The
-- gate remembers, for the duplicate window, whether the delivery was
-- accepted, or which attempt holds it and until when (its lease). A lease
-- ends on its own, so an attempt that dies (a killed process, a Lambda cut
-- off at its timeout) holds up the sender's retry for one lease at most.
-- With a second key, the event's trace gets the entry the outcome calls
-- for in the same call (both keys share the event's hash tag): one round
-- trip where ingest made two.
--
-- KEYS[1]   STRING: 'accepted', or 'attempt:<nonce>:<lease end, ms since the epoch>'
-- KEYS[2]   optional LIST: the event's trace (trace_entry.lua)
-- ARGV[1]   this attempt's nonce (hex, no ':')
-- ARGV[2]   the lease in ms
-- ARGV[3]   how long the gate is kept, in ms (the duplicate window plus the lease)
-- ARGV[4]   with KEYS[2]: the trace's ttl in ms
-- ARGV[5]   with KEYS[2]: most trace entries kept
-- ARGV[6]   with KEYS[2]: the `received` detail (JSON) of a first attempt
-- ARGV[7]   with KEYS[2]: the `received` detail (JSON) of a retry
--
-- Returns {1, value} when this is the delivery's first attempt, {3, value}
-- when it takes over from an earlier attempt whose lease ended (that
-- attempt's outcome is unknown: it may have reached the queue), value being
-- what this attempt wrote; {2, ms} when an earlier attempt's lease still
-- runs for ms; {0, pttl} when the delivery was accepted already. Traced:
-- `received` for 1 and 3, `duplicate` for 0, nothing for 2.

local function traced(stage, detail)
  if KEYS[2] then
    trace_append(KEYS[2], stage, detail, ARGV[4], ARGV[5])
  end
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local mine = 'attempt:' .. ARGV[1] .. ':' .. string.format('%d', now + tonumber(ARGV[2]))
local current = redis.call('GET', KEYS[1])
if not current then
  redis.call('SET', KEYS[1], mine, 'PX', ARGV[3])
  traced('received', ARGV[6])
  return {1, mine}
end
if current == 'accepted' then
  traced('duplicate', '{}')
  return {0, redis.call('PTTL', KEYS[1])}
end
local ends = tonumber(string.match(current, '^attempt:[^:]*:(%d+)$'))
if ends and ends > now then
  return {2, ends - now}
end
-- The lease ended (or the value is from an older sluice): take over.
redis.call('SET', KEYS[1], mine, 'PX', ARGV[3])
traced('received', ARGV[7])
return {3, mine}
