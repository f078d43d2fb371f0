-- Acknowledges a drained batch, then trims a snapshot stream below what
-- every consumer group on it has acknowledged: below the smallest id a
-- group still has pending, and not beyond what each group has been
-- delivered. One call instead of four round trips (XACK, XINFO GROUPS,
-- XPENDING, XTRIM) after every drained batch.
--
-- KEYS[1]   STREAM: one shard's snapshot stream
-- ARGV[1]   the group acknowledging (absent: only trim)
-- ARGV[2..] the ids it acknowledges
--
-- Returns { acknowledged, trimmed }: how many of the ids were pending, and
-- how many entries were trimmed (0 while the stream has no group).
-- Ids are compared as (ms, seq) numbers: exact for every id Redis
-- generates (ms below 2^53, seq small).

local function parse(id)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  if not ms then
    return nil
  end
  return { tonumber(ms), tonumber(seq) }
end

local function below(a, b)
  return a[1] < b[1] or (a[1] == b[1] and a[2] < b[2])
end

-- XACK of ARGV[from..to]: in slices, as unpack's stack is bounded
-- (a few thousand values) and a batch's size is a setting.
local acked = 0
for from = 2, #ARGV, 1000 do
  acked = acked + redis.call('XACK', KEYS[1], ARGV[1], unpack(ARGV, from, math.min(from + 999, #ARGV)))
end

-- The smallest id any group may still need, or nil.
local function floor_of_groups()
  local floor = nil
  for _, group in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
    local info = {}
    for i = 1, #group, 2 do
      info[group[i]] = group[i + 1]
    end
    local keep_from
    if tonumber(info['pending']) > 0 then
      -- The summary form: count, smallest id, greatest id, consumers.
      keep_from = parse(redis.call('XPENDING', KEYS[1], info['name'])[2])
    else
      local delivered = parse(info['last-delivered-id'])
      keep_from = delivered and { delivered[1], delivered[2] + 1 }
    end
    if not keep_from then
      return nil
    end
    if not floor or below(keep_from, floor) then
      floor = keep_from
    end
  end
  return floor
end

local floor = floor_of_groups()
if not floor then
  return { acked, 0 }
end
return { acked, redis.call('XTRIM', KEYS[1], 'MINID', string.format('%d-%d', floor[1], floor[2])) }
