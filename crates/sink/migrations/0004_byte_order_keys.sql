-- The key columns hold ids (mall ids, resource kinds and ids, event ids,
-- stream entry ids, outcome names), never words: their indexes compare
-- them byte by byte (the "C" collation) instead of through the
-- database's locale, which PostgreSQL can do several times faster (no
-- strcoll, abbreviated sort keys) on every upsert's conflict check and
-- index insert. The drain already sorts its batches byte by byte, so the
-- order it locks rows in is the indexes' order.
ALTER TABLE sluice.snapshots
    ALTER COLUMN mall_id TYPE text COLLATE "C",
    ALTER COLUMN kind TYPE text COLLATE "C",
    ALTER COLUMN resource_id TYPE text COLLATE "C";
ALTER TABLE sluice.events
    ALTER COLUMN event_id TYPE text COLLATE "C",
    ALTER COLUMN outcome TYPE text COLLATE "C",
    ALTER COLUMN entry_id TYPE text COLLATE "C";
