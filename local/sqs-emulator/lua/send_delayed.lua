-- Enqueues messages on a standard queue. Each message is a group of its
-- own, named by its message id, so nothing orders it after another: the
-- receive, delete, visibility and redrive scripts serve it unchanged, one
-- message per group. A message with a delay starts with its group blocked
-- until the delay is over, exactly as a group whose message is in flight;
-- the first receive after that moment puts it in the ready ring (a
-- standard queue's ready groups are always a ring, cfg scan 'rr'). It is
-- told apart from an in-flight message by its receive count, still 0.
-- No deduplication: the dedup keys are not touched.
--
-- KEYS[1..8]  the queue's cfg, body, meta, order, arrival, ready, gstate,
--             blocked (see send.lua and receive.lua). All KEYS share the
--             store's hash tag.
-- ARGV[3i-2], ARGV[3i-1], ARGV[3i]
--             message i: message id (drawn by the caller, a UUID), delay
--             ms ('' for the queue's DelaySeconds, cfg 'delay'), body
--
-- Returns {'ok', message id per message} or {'noqueue'}.
-- (clock.lua is prepended.)

if redis.call('EXISTS', KEYS[1]) == 0 then
  return {'noqueue'}
end
local now = now_ms()
local queue_delay = tonumber(redis.call('HGET', KEYS[1], 'delay')) or 0

local out = {'ok'}
for i = 1, #ARGV, 3 do
  local id, body = ARGV[i], ARGV[i + 2]
  local delay = tonumber(ARGV[i + 1]) or queue_delay
  local vis = 0
  if delay > 0 then vis = now + delay end
  local seq = redis.call('HINCRBY', KEYS[1], 'seq', 1)
  redis.call('HSET', KEYS[2], seq, body)
  redis.call('HSET', KEYS[3], seq, cjson.encode({id = id, g = id, d = id, sent = now, rc = 0, fr = 0, vis = vis}))
  redis.call('ZADD', KEYS[4], 0, id .. ' ' .. string.format('%020d', seq))
  redis.call('ZADD', KEYS[5], seq, seq)
  if vis > 0 then
    redis.call('HSET', KEYS[7], id, 'b')
    redis.call('ZADD', KEYS[8], vis, id)
  else
    redis.call('HSET', KEYS[7], id, 'r')
    redis.call('RPUSH', KEYS[6], id)
  end
  out[#out + 1] = id
end
return out
