-- A new token was stored for a parked mall (`sluice tokens set`): its hold
-- turns from parked to releasing, so the next catch-up run sends its held
-- events, oldest first, while new ones keep queueing behind them.
--
-- KEYS[1]   HASH: the parking (key `hold`), {state, reason, since}
--
-- Returns 1 when the mall was held (parked or already releasing: a
-- release whose catch-up request was lost can be asked for again), 0 when it
-- was not.

local state = redis.call('HGET', KEYS[1], 'state')
if not state then
  return 0
end
redis.call('HSET', KEYS[1], 'state', 'releasing')
return 1
