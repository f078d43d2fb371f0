-- Deletes a queue: its settings and every key holding its messages.
--
-- KEYS[1]   SET   the store's queue names
-- KEYS[2]   HASH  the queue's cfg
-- KEYS[3..] every other key of the queue (body, meta, order, arrival,
--           ready, gstate, blocked, dedup, dedupx, rx, rxx). All KEYS share the
--           store's hash tag.
-- ARGV[1]   queue name
--
-- Returns 1, or 0 when the queue does not exist.

if redis.call('EXISTS', KEYS[2]) == 0 then
  return 0
end
for i = 2, #KEYS do
  redis.call('UNLINK', KEYS[i])
end
redis.call('SREM', KEYS[1], ARGV[1])
return 1
