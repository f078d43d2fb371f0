-- Deletes every message of a queue. The settings stay, and so do the
-- deduplication ids: a purged message's id is remembered for the rest of
-- its five minutes, as a deleted message's is.
--
-- KEYS[1]   HASH  the queue's cfg
-- KEYS[2..] the keys holding messages (body, meta, order, arrival, ready,
--           gstate, blocked). All KEYS share the store's hash tag.
--
-- Returns 1, or 0 when the queue does not exist.

if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
for i = 2, #KEYS do
  redis.call('UNLINK', KEYS[i])
end
return 1
