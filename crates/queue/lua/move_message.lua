-- Prepended to the scripts that move a message to another queue
-- (receive.lua to the dead-letter queue, move_messages.lua for redrive):
-- takes message seq of group g out of the queue of KEYS[2..5] and puts it
-- at the tail of its group in the queue of KEYS[9..15], with meta as the
-- caller has updated it. One definition, so the two moves cannot drift
-- apart from the key layout (see receive.lua and send.lua).
--
-- Uses KEYS[2] body, KEYS[3] meta, KEYS[4] order, KEYS[5] arrival of the
-- source and KEYS[9..15] cfg, body, meta, order, arrival, ready, gstate of
-- the target.

local function move_message(g, seq, meta)
  local body = redis.call('HGET', KEYS[2], seq)
  redis.call('HDEL', KEYS[2], seq)
  redis.call('HDEL', KEYS[3], seq)
  redis.call('ZREM', KEYS[4], g .. ' ' .. string.format('%020d', seq))
  redis.call('ZREM', KEYS[5], seq)
  local nseq = redis.call('HINCRBY', KEYS[9], 'seq', 1)
  redis.call('HSET', KEYS[10], nseq, body)
  redis.call('HSET', KEYS[11], nseq, cjson.encode(meta))
  redis.call('ZADD', KEYS[12], 0, g .. ' ' .. string.format('%020d', nseq))
  redis.call('ZADD', KEYS[13], nseq, nseq)
  if redis.call('HSETNX', KEYS[15], g, 'r') == 1 then
    redis.call('RPUSH', KEYS[14], g)
  end
end

