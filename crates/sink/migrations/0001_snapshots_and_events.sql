-- sluice's tables, in a schema of their own so they never collide with the
-- user's. Applied by `sluice db migrate`, by `sluice dev` at start, and by
-- the drain function at cold start (sqlx's migrator: each file once,
-- checksummed, under an advisory lock).

-- The latest snapshot of every Cafe24 resource sluice has fetched: one
-- table for products, orders and customers, keyed by (mall, kind, id).
-- One table, not one per kind: the drain writes every kind in one
-- statement, and what users query by is the same three columns.
CREATE TABLE sluice.snapshots (
    mall_id      text        NOT NULL,
    kind         text        NOT NULL,  -- product | order | customer
    resource_id  text        NOT NULL,
    status       text        NOT NULL,  -- found | deleted (Cafe24 answered 404)
    body         jsonb,                 -- the resource as Cafe24 returned it; NULL when deleted
    updated_date text,                  -- Cafe24's updated_date, as sent
    version      bigint      NOT NULL,  -- when sluice fetched it (ms since the epoch): newer replaces older, never the reverse
    event_ids    jsonb       NOT NULL,  -- the webhooks this fetch answers (JSON array of event ids)
    entry_id     text        NOT NULL,  -- the Redis stream entry it was drained from
    written_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (mall_id, kind, resource_id)
);

-- Every event's outcomes, kept after its Redis trace (7 days) expires:
-- `sluice trace` falls back to it.
CREATE TABLE sluice.events (
    event_id  text        NOT NULL,
    outcome   text        NOT NULL,     -- e.g. written
    at        timestamptz NOT NULL,
    detail    jsonb       NOT NULL DEFAULT '{}'::jsonb,
    PRIMARY KEY (event_id, outcome)
);

-- Stream entries the drain could not read as a snapshot (a field missing,
-- a body that is not JSON): kept here instead of blocking the stream or
-- vanishing.
CREATE TABLE sluice.unreadable_entries (
    stream    text        NOT NULL,
    entry_id  text        NOT NULL,
    fields    jsonb       NOT NULL,
    reason    text        NOT NULL,
    at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (stream, entry_id)
);
