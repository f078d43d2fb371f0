//! sluice's PostgreSQL sink: where fetched shop data ends up.
//!
//! The store step appends each fetched snapshot to a Redis stream (one per
//! shard, see `sluice_redis::snapshot_store`). The drain worker here reads
//! those streams as a consumer group, writes each batch to PostgreSQL in
//! one transaction, acknowledges the entries only after the commit, and
//! trims from the streams what every group has acknowledged, so ElastiCache
//! holds only what is not yet in the database. The failure step appends
//! to the same streams each shop event it gives up to the dead-letter queue
//! (an `outcome` entry): the drain records those in `sluice.events` only,
//! in the same transactions, so a dead-lettered event is in the event log too.
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
//! sluice.events              (event_id, outcome, entry_id, position) → at, detail, mall_id, kind, resource_id, version: each webhook's journey and fate, kept after its Redis trace expires
//! sluice.unreadable_entries  (stream, entry_id) → fields, reason: entries that are not a snapshot, kept rather than dropped
//! sluice._sqlx_migrations    the migrations applied
//! ```
//!
//! # Layout
//!
//! - [`database`]: connecting, with errors that name the endpoint, never the URL.
//! - [`schema`]: the migrations, embedded, and applying them.
//! - [`snapshot_row`]: a snapshot stream entry read as a row.
//! - [`outcome_row`]: an outcome stream entry (an event dead-lettered) read as an event row.
//! - `batch`: a batch's entries read once: the newest snapshot per resource, the rest sorted out.
//! - [`writer`]: one batch in one transaction: upsert, events, unreadable entries.
//! - [`event_rows`]: a batch's `sluice.events` rows: the drain's outcomes and each event's journey, each recorded once.
//! - [`drain`]: the worker: read, write, acknowledge, trim; retry with backoff.
//! - `pass_report`: what a pass did, counted.
//! - `drain_health`: whether the drain is failing, and since when.
//! - [`event_log`]: an event's outcomes, read back for `sluice trace`.
//! - [`error`]: what can go wrong, named.

mod batch;
pub mod database;
pub mod drain;
mod drain_health;
pub mod error;
pub mod event_log;
pub mod event_rows;
pub mod outcome_row;
mod pass_report;
pub mod schema;
pub mod snapshot_row;
pub mod writer;

pub use database::connect;
pub use drain::{Drain, DrainConfig, DrainHealth, PassReport};
pub use error::SinkError;
pub use event_log::{EventOutcome, outcomes};
pub use event_rows::Journeys;
pub use outcome_row::{OutcomeRow, parse_outcome};
pub use schema::migrate;
pub use snapshot_row::{SnapshotRow, parse_entry};
pub use writer::{BatchOutcome, SnapshotWriter};
