-- Coalescing at ingest: claim a resource's pending mark for an event, or
-- join the fetch another event has pending. A mark starts as a lease
-- ('lease:<owner>', as long as one request may take) and becomes '<owner>'
-- only once the owner's message is in the queue (gate_confirm.lua). Events
-- join only a confirmed mark, so nobody joins a fetch that never comes: a
-- lease whose owner died ends on its own, and meanwhile events for the
-- resource are enqueued on their own.
--
-- KEYS[1]   STRING: the mark, '<owner id>' or 'lease:<owner id>'
-- KEYS[2]   LIST: ids that joined the owner's pending fetch (same hash tag)
-- ARGV[1]   the caller's event id
-- ARGV[2]   the lease in ms
-- ARGV[3]   the pending timeout in ms (a confirmed mark lapses after it)
-- ARGV[4]   '1' when the caller may start a new mark: only a delivery's
--           first attempt may, since a later attempt's message can be one
--           the queue drops as a duplicate, which would leave a mark that
--           no fetch ever clears
--
-- Returns {1} the caller holds the lease (enqueue, then confirm); {2}
-- enqueue without a mark; {3} the caller's own mark is confirmed (its
-- message is in the queue: a duplicate); {0, owner, pttl_ms} joined.

local current = redis.call('GET', KEYS[1])
local lease = 'lease:' .. ARGV[1]
if current == ARGV[1] then
  return {3}
end
if current == lease or (not current and ARGV[4] == '1') then
  redis.call('SET', KEYS[1], lease, 'PX', ARGV[2])
  return {1}
end
if not current or string.sub(current, 1, 6) == 'lease:' then
  return {2}
end
local pttl = redis.call('PTTL', KEYS[1])
redis.call('RPUSH', KEYS[2], ARGV[1])
-- Joiners must stay readable as long as some owner's fetch may still start.
redis.call('PEXPIRE', KEYS[2], pttl + tonumber(ARGV[3]))
return {0, current, pttl}
