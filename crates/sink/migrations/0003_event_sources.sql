-- An event can reach the same outcome more than once: answered by two
-- snapshots (two products' fetches, a refetch), parked again after a
-- redrive, a stage its trace holds twice (fetched on two attempts). Keyed
-- by (event_id, outcome) the log kept only the first. A row is now keyed
-- by where it came from:
--   the stream entry the drain recorded it from (its own outcomes:
--   written, superseded, parked): `entry_id`, with `position` the largest
--   int, so within one millisecond it comes after the journey's stages;
--   or its place in the event's Redis trace (the journey's stages):
--   `position`, with `entry_id` ''.
-- An event's entries are all in its mall's shard, so an entry id (unique
-- within one stream) names one entry for one event. Each source is
-- recorded once however often its entry is drained again.
ALTER TABLE sluice.events ADD COLUMN entry_id text NOT NULL DEFAULT '';
UPDATE sluice.events SET entry_id = detail->>'entry_id', position = 2147483647
    WHERE outcome IN ('written', 'superseded') AND detail ? 'entry_id';
ALTER TABLE sluice.events DROP CONSTRAINT events_pkey;
ALTER TABLE sluice.events ADD PRIMARY KEY (event_id, outcome, entry_id, position);
