-- Creates a queue (FIFO or standard: the caller tells them apart by the
-- name), or reports the one that exists under that name.
--
-- KEYS[1]  SET   the store's queue names
-- KEYS[2]  HASH  the new queue's settings (cfg)
-- KEYS[3]  HASH  the dead-letter queue's cfg (present only with a redrive
--                policy). All KEYS share the store's hash tag.
-- ARGV[1]  queue name
-- ARGV[2]  visibility timeout ms     ARGV[3]  receive wait s
-- ARGV[4]  content-based dedup 0|1   ARGV[5]  dead-letter queue name or ''
-- ARGV[6]  maxReceiveCount (0 = none)
-- ARGV[7]  incarnation: a random id drawn by the caller, carried by every
--          receipt handle of this queue
-- ARGV[8]  DelaySeconds in ms: the delay of a message naming none
--          (standard queues; 0 for FIFO)
-- ARGV[9]  group scan: 'rr' (round-robin) | 'sqs' (as SQS FIFO; see
--          ready_group.lua)             ARGV[10] its window (messages; 0 for rr)
--
-- Returns {status, vis, wait, cbd, dlq, maxrc, created_ms, incarnation,
-- delay_ms, scan, window}
-- with status 'created' or 'exists' (the stored settings, for the caller to
-- compare), or {'nodlq'} when the dead-letter queue does not exist.
-- (clock.lua is prepended.)

local function settings(status)
  local s = redis.call('HMGET', KEYS[2], 'vis', 'wait', 'cbd', 'dlq', 'maxrc', 'created', 'inc', 'delay', 'scan',
    'window')
  return {status, s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8], s[9], s[10]}
end

if redis.call('EXISTS', KEYS[2]) == 1 then
  return settings('exists')
end
if ARGV[5] ~= '' and redis.call('EXISTS', KEYS[3]) == 0 then
  return {'nodlq'}
end
local now = now_ms()
redis.call('HSET', KEYS[2], 'vis', ARGV[2], 'wait', ARGV[3], 'cbd', ARGV[4], 'dlq', ARGV[5],
  'maxrc', ARGV[6], 'created', string.format('%d', now), 'inc', ARGV[7], 'seq', 0, 'delay', ARGV[8],
  'scan', ARGV[9], 'window', ARGV[10])
redis.call('SADD', KEYS[1], ARGV[1])
return settings('created')
