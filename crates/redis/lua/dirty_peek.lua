-- The oldest resources of a mall's dirty set, for one catch-up run. Nothing
-- leaves here: an entry leaves only once its snapshot is stored
-- (dirty_done.lua), so a run that dies takes nothing with it.
--
-- KEYS[1]   HASH: the dirty set, resource -> JSON {seq, since, events}
-- KEYS[2]   ZSET: the dirty set's order, resource -> µs it became dirty
-- ARGV[1]   how many
--
-- Returns {resource, entry JSON, ...}, oldest first.

local out = {}
local names = redis.call('ZRANGE', KEYS[2], 0, tonumber(ARGV[1]) - 1)
for _, name in ipairs(names) do
  local raw = redis.call('HGET', KEYS[1], name)
  if raw then
    table.insert(out, name)
    table.insert(out, raw)
  else
    -- An order entry without its resource (the hash expired first).
    redis.call('ZREM', KEYS[2], name)
  end
end
return out
