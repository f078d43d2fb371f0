-- Prepended to the scripts that take messages out of flight early
-- (receipt.lua, release_in_flight.lua): settles group g once some of its
-- messages have left flight. When nothing of the group is in flight any
-- more, it rejoins the ready groups (the ring's back, or by its head) (or
-- is forgotten when empty); otherwise its blocked moment becomes its latest in-flight
-- message's. Returns true when the group left `blocked`. by_head: the
-- queue scans as SQS FIFO does (ready_group.lua, prepended before this).
--
-- Uses KEYS[3] meta, KEYS[4] order, KEYS[6] ready, KEYS[7] gstate,
-- KEYS[8] blocked of the calling script (see receive.lua).

local function settle_group(g, now, by_head)
  -- In-flight messages are the group's head: at most a batch of ten.
  local members = redis.call('ZRANGEBYLEX', KEYS[4], '[' .. g .. ' ', '(' .. g .. '!', 'LIMIT', 0, 10)
  local latest = nil
  for _, member in ipairs(members) do
    local m = cjson.decode(redis.call('HGET', KEYS[3], tonumber(string.sub(member, #g + 2))))
    if m.vis > now and (latest == nil or m.vis > latest) then
      latest = m.vis
    end
  end
  if latest then
    redis.call('ZADD', KEYS[8], latest, g)
    return false
  end
  redis.call('ZREM', KEYS[8], g)
  unblock(KEYS[6], KEYS[7], by_head, g, members[1])
  return true
end

