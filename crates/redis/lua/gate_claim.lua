-- Coalescing at ingest: claim a resource's pending mark for an event, or
-- join the fetch another event has pending. A mark starts as a lease
-- ('lease:<owner>', as long as one request may take) and becomes '<owner>'
-- only once the owner's message is in the queue (gate_confirm.lua). Events
-- join only a confirmed mark, so nobody joins a fetch that never comes: a
-- lease whose owner died ends on its own, and meanwhile events for the
-- resource are enqueued on their own.
--
-- With flow control (KEYS[3..6] given), an event that joins nothing is
-- deferred instead of enqueued while its mall has a backlog: at least
-- ARGV[5] messages in the queue, or resources already in its dirty set.
-- The event is recorded in the dirty set (once per resource, its id kept
-- for tracing) and the mall's catch-up chain is checked: see
-- crates/redis/src/backlog.rs. Runs after dirty_record.lua (prepended).
--
-- KEYS[1]   STRING: the mark, '<owner id>' or 'lease:<owner id>'
-- KEYS[2]   LIST: ids that joined the owner's pending fetch (same hash tag)
-- KEYS[3]   ZSET: the mall's messages in the queue, event id -> ms counted;
--           an event not deferred is counted here, before its send, so
--           that concurrent webhooks cannot all slip under the threshold
--           (a send that fails takes it out again; one that dies lapses)
-- KEYS[4]   HASH: the mall's dirty set, resource -> JSON {seq, since, events}
-- KEYS[5]   ZSET: the dirty set's order, resource -> µs it became dirty
-- KEYS[6]   STRING: the catch-up chain, '<token>' or 'lease:<token>'
-- ARGV[1]   the caller's event id
-- ARGV[2]   the lease in ms
-- ARGV[3]   the pending timeout in ms (a confirmed mark lapses after it)
-- ARGV[4]   '1' when the caller may start a new mark: only a delivery's
--           first attempt may, since a later attempt's message can be one
--           the queue drops as a duplicate, which would leave a mark that
--           no fetch ever clears
-- ARGV[5]   flow control: queued messages at which the mall is deferred
-- ARGV[6]   flow control: ms after which a queued entry no longer counts
--           (its message was consumed by a step that died before leaving)
-- ARGV[7]   flow control: ms the dirty set lives after its latest change
-- ARGV[8]   flow control: most event ids kept per dirty resource
-- ARGV[9]   flow control: the resource's name in the dirty set
--
-- Returns {1} the caller holds the lease (enqueue, then confirm); {2}
-- enqueue without a mark; {3} the caller's own mark is confirmed (its
-- message is in the queue: a duplicate); {0, owner, pttl_ms} joined;
-- {4, chain, since_ms} deferred, chain = 0 the caller took the chain's
-- lease (send a catch-up request, then confirm), 1 a confirmed chain will
-- fetch it, 2 another caller's lease (send a catch-up request of its own).

local current = redis.call('GET', KEYS[1])
local lease = 'lease:' .. ARGV[1]
if current == ARGV[1] then
  return {3}
end
if current and string.sub(current, 1, 6) ~= 'lease:' then
  local pttl = redis.call('PTTL', KEYS[1])
  redis.call('RPUSH', KEYS[2], ARGV[1])
  -- Joiners must stay readable as long as some owner's fetch may still start.
  redis.call('PEXPIRE', KEYS[2], pttl + tonumber(ARGV[3]))
  return {0, current, pttl}
end

local t, now
if #KEYS == 6 then
  t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now - tonumber(ARGV[6]))
  if redis.call('HLEN', KEYS[4]) > 0 or redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[5]) then
    local chain, since = dirty_record(KEYS[4], KEYS[5], KEYS[6], ARGV[9], {ARGV[1]}, ARGV[8], ARGV[7], ARGV[1], ARGV[2], t)
    return {4, chain, since}
  end
end

if #KEYS == 6 then
  redis.call('ZADD', KEYS[3], now, ARGV[1])
  redis.call('PEXPIRE', KEYS[3], ARGV[6])
end
if current == lease or (not current and ARGV[4] == '1') then
  redis.call('SET', KEYS[1], lease, 'PX', ARGV[2])
  return {1}
end
return {2}
