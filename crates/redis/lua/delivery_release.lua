-- End an attempt's lease early, after it failed and told its sender so:
-- the sender's retry then need not wait for the lease. The gate stays, so
-- the retry still knows an earlier attempt was made.
--
-- KEYS[1]   STRING: the delivery's gate (see delivery_begin.lua)
-- ARGV[1]   the value this attempt wrote
--
-- Returns 1 when the lease was ended, 0 when another attempt (or the
-- acceptance) has replaced it.

if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
local nonce = string.match(ARGV[1], '^attempt:([^:]*):')
redis.call('SET', KEYS[1], 'attempt:' .. nonce .. ':0', 'KEEPTTL')
return 1
