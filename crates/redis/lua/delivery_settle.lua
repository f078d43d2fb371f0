-- Settle a delivery: it was accepted (enqueued, or joined a pending fetch),
-- so every later delivery of it within the window is a duplicate. With a
-- second key, the event's trace gets the entry saying how, in the same call
-- (both keys share the event's hash tag).
--
-- KEYS[1]   STRING: the delivery's gate (see delivery_begin.lua)
-- KEYS[2]   optional LIST: the event's trace (trace_entry.lua)
-- ARGV[1]   how long an accepted delivery is remembered, in ms
-- ARGV[2]   with KEYS[2]: stage
-- ARGV[3]   with KEYS[2]: detail (JSON)
-- ARGV[4]   with KEYS[2]: the trace's ttl in ms
-- ARGV[5]   with KEYS[2]: most trace entries kept
--
-- Returns 1.

redis.call('SET', KEYS[1], 'accepted', 'PX', ARGV[1])
if KEYS[2] then
  trace_append(KEYS[2], ARGV[2], ARGV[3], ARGV[4], ARGV[5])
end
return 1
