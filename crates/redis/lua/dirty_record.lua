-- A library prepended to the scripts that put events in a mall's dirty
-- set (gate_claim.lua's deferral, dirty_hand_over.lua): one place for how
-- an entry is merged and how the catch-up chain is checked.
--
-- dirty_record(dirty, order, chain, resource, events, max_events,
--              retention_ms, token, lease_ms, t)
--   dirty     HASH: the mall's dirty set, resource -> JSON {seq, since, events}
--   order     ZSET: the dirty set's order, resource -> µs it became dirty
--   chain     STRING: the catch-up chain, '<token>' or 'lease:<token>'
--   resource  the resource's name in the set
--   events    event ids the entry answers (kept once each, at most
--             max_events in all)
--   retention_ms  how long the set lives after this change
--   token     the caller's id: the chain's lease is 'lease:<token>'
--   lease_ms  the lease's length
--   t         redis.call('TIME') of the caller
-- Returns chain, since_ms: chain = 0 the caller took the chain's lease
-- (send a catch-up request, then confirm), 1 a confirmed chain will fetch
-- it, 2 another caller's lease (send a catch-up request of its own).

local function dirty_record(dirty, order, chain, resource, events, max_events, retention_ms, token, lease_ms, t)
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local raw = redis.call('HGET', dirty, resource)
  local entry
  if raw then
    entry = cjson.decode(raw)
    -- cjson reads an empty array back as an object.
    if type(entry.events) ~= 'table' or entry.events[1] == nil then entry.events = {} end
  else
    entry = {seq = 0, since = now, events = {}}
    -- µs, so resources dirtied in one ms keep their order.
    redis.call('ZADD', order, tonumber(t[1]) * 1000000 + tonumber(t[2]), resource)
  end
  entry.seq = entry.seq + 1
  local known = {}
  for _, id in ipairs(entry.events) do known[id] = true end
  for _, id in ipairs(events) do
    if not known[id] and #entry.events < tonumber(max_events) then
      table.insert(entry.events, id)
      known[id] = true
    end
  end
  redis.call('HSET', dirty, resource, cjson.encode(entry))
  redis.call('PEXPIRE', dirty, retention_ms)
  redis.call('PEXPIRE', order, retention_ms)
  local current = redis.call('GET', chain)
  if not current then
    redis.call('SET', chain, 'lease:' .. token, 'PX', lease_ms)
    return 0, entry.since
  end
  if string.sub(current, 1, 6) == 'lease:' then
    return 2, entry.since
  end
  return 1, entry.since
end

