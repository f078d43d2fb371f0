-- Redrive: moves messages from one queue to the tail of their groups in
-- another, in the order they arrived in the first, as if newly sent
-- (receive count 0, no deduplication check). A group with anything in
-- flight is skipped whole, so no message overtakes one being received.
-- Works through the source's arrival order a slice at a time; the caller
-- passes the cursor back until done.
--
-- KEYS[1..8]   the source's cfg, body, meta, order, arrival, ready, gstate,
--              blocked
-- KEYS[9..15]  the target's cfg, body, meta, order, arrival, ready, gstate
--              All KEYS share the store's hash tag.
-- ARGV[1]      only messages moved here by this queue ('' for all)
-- ARGV[2]      cursor: the last seq looked at (0 to start)
-- ARGV[3]      slice size
--
-- Returns {'ok', moved, cursor, done 0|1}, or {'noqueue', 1|2} naming the
-- missing queue. (clock.lua, ready_group.lua and move_message.lua are
-- prepended.)

if redis.call('EXISTS', KEYS[1]) == 0 then return {'noqueue', 1} end
if redis.call('EXISTS', KEYS[9]) == 0 then return {'noqueue', 2} end
local now = now_ms()
local slice = tonumber(ARGV[3])
local seqs = redis.call('ZRANGEBYSCORE', KEYS[5], '(' .. ARGV[2], '+inf', 'LIMIT', 0, slice)
local moved = 0
local cursor = tonumber(ARGV[2])
local by_head = scans_by_head(KEYS[1])

for _, s in ipairs(seqs) do
  local seq = tonumber(s)
  cursor = seq
  local meta = cjson.decode(redis.call('HGET', KEYS[3], seq))
  local g = meta.g
  local until_ms = tonumber(redis.call('ZSCORE', KEYS[8], g))
  local in_flight = until_ms ~= nil and until_ms > now
  if not in_flight and (ARGV[1] == '' or meta.src == ARGV[1]) then
    meta.rc = 0
    meta.fr = 0
    meta.vis = 0
    meta.src = nil
    move_message(g, seq, meta)
    if redis.call('HGET', KEYS[7], g) == 'r' then
      ready_head_removed(KEYS[4], KEYS[6], KEYS[7], by_head, g, seq)
    end
    moved = moved + 1
  end
end
local done = 0
if #seqs < slice then done = 1 end
return {'ok', moved, cursor, done}
