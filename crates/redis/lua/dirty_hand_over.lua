-- Hand a fetch that its mall's bucket cannot serve now over to the mall's
-- dirty set, so the pipe that carried it moves on instead of waiting for
-- the budget (a pipe is shared by every mall; the dirty set is drained by
-- the mall's own catch-up runs, at the bucket's rate). The caller has taken
-- the events its fetch answers (gate_take.lua): they join the resource's
-- dirty entry, and the owner's message stops counting in the queue.
--
-- KEYS[1]   ZSET: the mall's messages in the queue, event id -> ms counted
-- KEYS[2]   HASH: the mall's dirty set, resource -> JSON {seq, since, events}
-- KEYS[3]   ZSET: the dirty set's order, resource -> µs it became dirty
-- KEYS[4]   STRING: the catch-up chain, '<token>' or 'lease:<token>'
-- ARGV[1]   the owner's event id (the chain's token if it takes the chain)
-- ARGV[2]   the chain's lease in ms
-- ARGV[3]   ms the dirty set lives after its latest change
-- ARGV[4]   most event ids kept per dirty resource
-- ARGV[5]   the resource's name in the dirty set
-- ARGV[6..] the events the fetch answers
--
-- Runs after dirty_record.lua (prepended).
--
-- Returns {chain, since_ms} as gate_claim.lua's deferral does: chain = 0
-- the caller took the chain's lease (send a catch-up request, then confirm),
-- 1 a confirmed chain will drain it, 2 another caller's lease (send a
-- catch-up request of its own).

local t = redis.call('TIME')
redis.call('ZREM', KEYS[1], ARGV[1])

local events = {}
for i = 6, #ARGV do events[#events + 1] = ARGV[i] end
local chain, since = dirty_record(KEYS[2], KEYS[3], KEYS[4], ARGV[5], events, ARGV[4], ARGV[3], ARGV[1], ARGV[2], t)
return {chain, since}
