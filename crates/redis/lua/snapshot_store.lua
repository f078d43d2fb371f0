-- Store a fetched snapshot: append the hash the fetch step left to the
-- shard's stream, once per idempotency key, then drop the body from the
-- hash. The body (up to megabytes) never travels through Step Functions,
-- whose states are limited to 256 KiB; only this hash's key does.
--
-- KEYS[1]   STREAM: the shard's snapshots (owner: the drain worker, which
--           trims what it has consumed; MAXLEN caps it meanwhile)
-- KEYS[2]   STRING: the idempotency key, holding the entry id
-- KEYS[3]   HASH: the fetched snapshot (written by the fetch step with a
--           TTL): `snapshot`, the entry's one field (see snapshot_entry.rs),
--           and `event_ids`, `status`, `version` for the reply. A hash an
--           earlier release wrote holds the entry's fields one by one, with
--           `body`: all of them are appended.
--           All KEYS share the shard's hash tag {store:<n>}.
-- ARGV[1]   idempotency key TTL in ms
-- ARGV[2]   approximate MAXLEN of the stream
--
-- Returns {1, entry_id, event_ids, status, version} when appended,
-- {0, entry_id, event_ids, status, version} for a duplicate (the last three
-- false once the hash has expired), {-1, false, false, false, false} when
-- there is nothing to store: the hash is gone (expired, or never written)
-- and the key was never stored.

local meta = redis.call('HMGET', KEYS[3], 'event_ids', 'status', 'version')
local existing = redis.call('GET', KEYS[2])
if existing then
  -- Stored before (a redelivery fetched again): this body is never
  -- appended, so it need not wait for its TTL.
  redis.call('HDEL', KEYS[3], 'snapshot', 'body')
  return {0, existing, meta[1], meta[2], meta[3]}
end
local args = {'XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], '*'}
local snapshot = redis.call('HGET', KEYS[3], 'snapshot')
if snapshot then
  args[#args + 1] = 'snapshot'
  args[#args + 1] = snapshot
elseif redis.call('HEXISTS', KEYS[3], 'body') == 1 then
  local fields = redis.call('HGETALL', KEYS[3])
  for i = 1, #fields do args[#args + 1] = fields[i] end
else
  -- A hash without its snapshot was stored before under another key:
  -- storing it again would append an entry without the body.
  return {-1, false, false, false, false}
end
local id = redis.call(unpack(args))
redis.call('SET', KEYS[2], id, 'PX', ARGV[1])
-- The snapshot is in the stream now. The small fields stay until the
-- hash's TTL, so a store retried after a lost reply still learns which
-- events it answered.
redis.call('HDEL', KEYS[3], 'snapshot', 'body')
return {1, id, meta[1], meta[2], meta[3]}
