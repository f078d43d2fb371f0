//! sluice's PostgreSQL sink: where fetched shop data ends up.
//!
//! The store step appends each fetched snapshot to a Redis stream (one per
//! shard, see `sluice_redis::snapshot_store`). The drain worker here reads
//! those streams as a consumer group, writes each batch to PostgreSQL in
//! one transaction, acknowledges the entries only after the commit, and
//! trims from the streams what every group has acknowledged, so ElastiCache
//! holds only what is not yet in the database.
//!
//! Exactly once in effect: an entry drained twice (a drain that died
//! between commit and acknowledgement, a claimed entry) writes the same row
//! again only if it is newer, and a snapshot never replaces a newer one
//! (`version`, the fetch time, decides), so redelivery and reordering are
//! harmless.
//!
//! # Tables (schema `sluice`, migrations in `migrations/`)
//!
//! ```text
//! sluice.snapshots           (mall_id, kind, resource_id) → latest body (jsonb), status, updated_date, version, event_ids, entry_id, written_at
//! sluice.events              (event_id, outcome) → at, detail, position: each webhook's journey and fate, kept after its Redis trace expires
//! sluice.unreadable_entries  (stream, entry_id) → fields, reason: entries that are not a snapshot, kept rather than dropped
//! sluice._sqlx_migrations    the migrations applied
//! ```
//!
//! # Layout
//!
//! - [`database`]: connecting, with errors that name the endpoint, never the URL.
//! - [`schema`]: the migrations, embedded, and applying them.
//! - [`snapshot_row`]: a stream entry read as a row.
//! - [`writer`]: one batch in one transaction: upsert, events, unreadable entries.
//! - [`drain`]: the worker: read, write, acknowledge, trim; retry with backoff.
//! - [`server`]: a private PostgreSQL (initdb + postgres on a free port) for the demo and the tests.
//! - [`event_log`]: an event's outcomes, read back for `sluice trace`.
//! - [`error`]: what can go wrong, named.

pub mod database;
pub mod drain;
pub mod error;
pub mod event_log;
pub mod schema;
pub mod server;
pub mod snapshot_row;
pub mod writer;

pub use database::connect;
pub use drain::{Drain, DrainConfig, DrainHealth, PassReport};
pub use error::SinkError;
pub use event_log::{EventOutcome, outcomes};
pub use schema::migrate;
pub use server::{PostgresServer, ServerError};
pub use snapshot_row::{SnapshotRow, parse_entry};
pub use writer::{BatchOutcome, Journeys, SnapshotWriter};
