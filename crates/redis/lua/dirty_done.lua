-- A catch-up run stored these resources' snapshots. A resource leaves the
-- dirty set only if no webhook came for it since the run read it (same
-- seq); otherwise it stays, minus the events the stored snapshot answers,
-- and is fetched again: its snapshot must reflect the upstream at or
-- after its last webhook.
--
-- KEYS[1]   HASH: the dirty set, resource -> JSON {seq, since, events}
-- KEYS[2]   ZSET: the dirty set's order, resource -> µs it became dirty
-- ARGV      triples: resource, seq read, how many of its events were answered
--
-- Returns the resources left in the set.

for i = 1, #ARGV, 3 do
  local name, seq, answered = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  local raw = redis.call('HGET', KEYS[1], name)
  if raw then
    local entry = cjson.decode(raw)
    if entry.seq == seq then
      redis.call('HDEL', KEYS[1], name)
      redis.call('ZREM', KEYS[2], name)
    else
      -- Events are appended, so the answered ones are the first ones.
      local rest = {}
      for j = answered + 1, #entry.events do
        table.insert(rest, entry.events[j])
      end
      entry.events = rest
      redis.call('HSET', KEYS[1], name, cjson.encode(entry))
    end
  end
end
return redis.call('HLEN', KEYS[1])
