-- Prepended to receive.lua (dead-letter move) and move_messages.lua
-- (redrive), so both moves follow one key layout: takes message seq of
-- group g out of the source (KEYS[2..5]: body, meta, order, arrival) and
-- puts it, with meta as the caller updated it, at the tail of its group
-- in the target (KEYS[9..15]: cfg, body, meta, order, arrival, ready,
-- gstate). (ready_group.lua is prepended.)

local target_by_head = nil

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
    if target_by_head == nil then target_by_head = scans_by_head(KEYS[9]) end
    join_ready(KEYS[14], target_by_head, g, nseq)
  end
end

