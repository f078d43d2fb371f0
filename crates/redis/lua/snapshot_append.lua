-- Append a snapshot to a shard's stream once per idempotency key: a
-- redelivered item that is stored again finds its key and gets the first
-- entry's id back instead of a second entry.
--
-- KEYS[1]   STREAM: the shard's snapshots (owner: the drain worker, which
--           trims what it has consumed; MAXLEN caps it meanwhile)
-- KEYS[2]   STRING: the idempotency key, holding the entry id (same tag)
-- ARGV[1]   idempotency key TTL in ms
-- ARGV[2]   approximate MAXLEN of the stream
-- ARGV[3..] field, value, field, value, ...
--
-- Returns {1, entry_id} when appended, {0, entry_id} for a duplicate.

local existing = redis.call('GET', KEYS[2])
if existing then
  return {0, existing}
end
local args = {'XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], '*'}
for i = 3, #ARGV do args[#args + 1] = ARGV[i] end
local id = redis.call(unpack(args))
redis.call('SET', KEYS[2], id, 'PX', ARGV[1])
return {1, id}
