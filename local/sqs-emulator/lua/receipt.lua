-- Acts on one received message by its receipt: deletes it, or changes its
-- visibility timeout. Either may unblock its group: when nothing of the
-- group is in flight any more, the group rejoins the ready groups (the
-- ring's back, or by its head: ready_group.lua); otherwise its blocked moment becomes its latest in-flight
-- message's.
--
-- KEYS[1..8]  the queue's cfg, body, meta, order, arrival, ready, gstate,
--             blocked (see send.lua and receive.lua). All KEYS share the
--             store's hash tag.
-- ARGV[1]     'delete' | 'visibility'
-- ARGV[2]     incarnation, ARGV[3] seq, ARGV[4] receive count: the receipt
-- ARGV[5]     new visibility timeout ms ('visibility' only)
--
-- Returns 'ok'; 'gone' (already deleted) or 'stale' (received again since
-- this receipt), on which a delete changes nothing; 'notinflight' for a
-- visibility change of a message not in flight under this receipt;
-- 'invalid' for a handle of another incarnation; 'noqueue'.
-- (clock.lua, ready_group.lua and settle_group.lua are prepended.)

if redis.call('EXISTS', KEYS[1]) == 0 then
  return 'noqueue'
end
if redis.call('HGET', KEYS[1], 'inc') ~= ARGV[2] then
  return 'invalid'
end
local seq = tonumber(ARGV[3])
local raw = redis.call('HGET', KEYS[3], seq)
if not raw then
  return 'gone'
end
local meta = cjson.decode(raw)
if meta.rc ~= tonumber(ARGV[4]) then
  return 'stale'
end
local now = now_ms()
local g = meta.g
local by_head = scans_by_head(KEYS[1])

if ARGV[1] == 'delete' then
  redis.call('HDEL', KEYS[2], seq)
  redis.call('HDEL', KEYS[3], seq)
  redis.call('ZREM', KEYS[4], g .. ' ' .. string.format('%020d', seq))
  redis.call('ZREM', KEYS[5], seq)
else
  if meta.vis <= now then
    return 'notinflight'
  end
  meta.vis = now + tonumber(ARGV[5])
  redis.call('HSET', KEYS[3], seq, cjson.encode(meta))
end

-- Settle the group. A ready group has nothing in flight (a message whose
-- visibility ended is deleted with its latest receipt): it is re-filed by
-- its new head, or, in a ring, one left empty stays there until a receive
-- reaches it (removing from the middle of a list costs a scan).
if redis.call('HGET', KEYS[7], g) ~= 'b' then
  if ARGV[1] == 'delete' then
    ready_head_removed(KEYS[4], KEYS[6], KEYS[7], by_head, g, seq)
  end
  return 'ok'
end
settle_group(g, now, by_head)
return 'ok'
