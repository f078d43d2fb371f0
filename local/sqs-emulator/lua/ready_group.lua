-- Prepended to every script that makes a group ready or takes a ready
-- group's head away. A queue's ready groups (KEYS 'ready') take one of two
-- shapes, fixed at creation by cfg 'scan':
--   'rr' (or absent: queues made before the choice existed)  LIST, the
--        round-robin ring: served from the front, joined at the back;
--   'sqs'  ZSET, ready groups scored by their head (oldest) message's
--        sequence number, so a receive finds the oldest available groups,
--        and those within the scan window, with one range query instead
--        of looking through the backlog (SQS FIFO's order).

-- Whether the queue whose cfg is `cfg` scans as SQS FIFO does.
local function scans_by_head(cfg)
  return redis.call('HGET', cfg, 'scan') == 'sqs'
end

-- Group g, whose head is message `head`, joins `ready`.
local function join_ready(ready, by_head, g, head)
  if by_head then
    redis.call('ZADD', ready, head, g)
  else
    redis.call('RPUSH', ready, g)
  end
end

-- Group g, nothing of it in flight any more: ready again in gstate and
-- `ready`, by its head `first` (its first order member), or forgotten when
-- it has none (receive.lua's blocked groups whose moment passed,
-- settle_group.lua's groups taken out of flight early).
local function unblock(ready, gstate, by_head, g, first)
  if first then
    redis.call('HSET', gstate, g, 'r')
    join_ready(ready, by_head, g, tonumber(string.sub(first, #g + 2)))
  else
    redis.call('HDEL', gstate, g)
  end
end

-- Message `seq` of group g left the queue while g was ready: under 'sqs',
-- re-file g by its new head (order: the queue's order key), or drop it
-- with its state (gstate) when it is empty. A ring serves whatever head
-- it finds, and drops empty groups when it reaches them.
local function ready_head_removed(order, ready, gstate, by_head, g, seq)
  if not by_head or tonumber(redis.call('ZSCORE', ready, g)) ~= seq then
    return
  end
  local first = redis.call('ZRANGEBYLEX', order, '[' .. g .. ' ', '(' .. g .. '!', 'LIMIT', 0, 1)
  if #first > 0 then
    redis.call('ZADD', ready, tonumber(string.sub(first[1], #g + 2)), g)
  else
    redis.call('ZREM', ready, g)
    redis.call('HDEL', gstate, g)
  end
end

