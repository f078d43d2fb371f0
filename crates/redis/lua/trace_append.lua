-- Append one entry to an event's trace (trace_entry.lua).
--
-- KEYS[1]   LIST: the event's trace, oldest first, JSON entries
-- ARGV[1]   stage (e.g. "received", "enqueued", "fetch")
-- ARGV[2]   detail: JSON text
-- ARGV[3]   ttl in ms
-- ARGV[4]   most entries kept (the oldest are dropped beyond it)
--
-- Returns the trace's length.

return trace_append(KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
