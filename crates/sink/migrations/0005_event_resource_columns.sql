-- The drain's own outcomes (written, superseded) name the snapshot row
-- that answered the event. Built as a jsonb `detail` for each row, that
-- name cost PostgreSQL about as much as the row itself (a jsonb built or
-- parsed per event); as plain columns it costs almost nothing. Rows from
-- before keep their `detail`; `sluice trace` reads both (`event_log`).
-- Nullable, without a default: adding them rewrites nothing.
ALTER TABLE sluice.events
    ADD COLUMN mall_id text COLLATE "C",
    ADD COLUMN kind text COLLATE "C",
    ADD COLUMN resource_id text COLLATE "C",
    ADD COLUMN version bigint;
