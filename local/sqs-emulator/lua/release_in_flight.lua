-- Returns every received message still in flight in one queue to visible,
-- as if its visibility timeout had just ended: its group rejoins the ready
-- groups with the message at its head, in the original order.
-- Receive counts and first-receive times are left as they are, so
-- maxReceiveCount still moves a message that keeps failing to the
-- dead-letter queue as SQS would. A delayed message of a standard queue
-- (never received: receive count 0) keeps its delay.
--
-- Only the holder of the consumer lease may do this, and it checks that in
-- the same script: a process that lost the lease can release nothing.
--
-- KEYS[1..8]  the queue's cfg, body, meta, order, arrival, ready, gstate,
--             blocked (see receive.lua)
-- KEYS[9]     the store's consumer lease. All KEYS share the store's hash tag.
-- ARGV[1]     the caller, as the lease stores it
-- ARGV[2]     rank in `blocked` to start at, ARGV[3] groups per call
--
-- Returns {'ok', released, next_rank, done 0|1}, {'notowner'} or {'noqueue'}.
-- (clock.lua, ready_group.lua and settle_group.lua are prepended.)

if redis.call('GET', KEYS[9]) ~= ARGV[1] then
  return {'notowner'}
end
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {'noqueue'}
end
local now = now_ms()
local start = tonumber(ARGV[2])
local slice = tonumber(ARGV[3])
local by_head = scans_by_head(KEYS[1])

local groups = redis.call('ZRANGE', KEYS[8], start, start + slice - 1)
local released = 0
local removed = 0
for _, g in ipairs(groups) do
  for _, member in ipairs(redis.call('ZRANGEBYLEX', KEYS[4], '[' .. g .. ' ', '(' .. g .. '!', 'LIMIT', 0, 10)) do
    local seq = tonumber(string.sub(member, #g + 2))
    local meta = cjson.decode(redis.call('HGET', KEYS[3], seq))
    if meta.vis > now and meta.rc > 0 then
      meta.vis = now
      redis.call('HSET', KEYS[3], seq, cjson.encode(meta))
      released = released + 1
    end
  end
  if settle_group(g, now, by_head) then
    removed = removed + 1
  end
end
local done = 0
if #groups < slice then done = 1 end
return {'ok', released, start + #groups - removed, done}
