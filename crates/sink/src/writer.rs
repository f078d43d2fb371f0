//! One drained batch in one PostgreSQL transaction: the snapshots upserted
//! (a row is replaced only by a newer version), each answered event's
//! outcome recorded, unreadable entries kept. Nothing of a batch is
//! visible unless all of it committed, so acknowledging after the commit
//! never acknowledges what the database does not hold.
//!
//! Both statements take whole arrays (`UNNEST`): one round trip per batch
//! whatever its size. Rows are sorted by key first, so two drains writing
//! overlapping batches lock rows in the same order and cannot deadlock on
//! each other; a batch holding two snapshots of one resource keeps the
//! newer (PostgreSQL refuses to update one row twice in a statement).
//!
//! A redelivered entry (a drain that died between the commit and the
//! acknowledgement, an entry claimed from a consumer that was slow) is one
//! the database already holds: its resource's row carries its entry id, or
//! its events already have an outcome naming it. It is counted apart and
//! records nothing again, so an event never gains a second outcome from
//! one snapshot. Only the snapshots the upsert did not write can be
//! redeliveries, so the check is a second round trip only for batches that
//! have some; it runs after the upsert, which waited for any other drain
//! still committing the same rows, so it sees what that drain wrote.
//!
//! Each answered event's journey before the drain (its Redis trace:
//! received, enqueued or coalesced into a pending fetch, fetched, stored,
//! …) lands in `sluice.events` in the same transaction, one row per stage
//! at the time Redis stamped it, so the event log tells the whole story
//! once the 7-day trace has expired (see `event_rows`).
//!
//! An outcome entry (an event parked in the dead-letter queue, see
//! `outcome_row`) becomes event rows only: its outcome at the time Redis
//! appended it, after the event's journey. Its rows are keyed by the
//! entry, so a redelivered one records nothing again.
//!
//! The transaction commits with `synchronous_commit` on, whatever the
//! server's or role's setting: the drain acknowledges the entries as soon as the
//! commit returns, and a commit acknowledged before it is durable could be
//! lost in a crash after the entries left the stream.
//!
//! A deadlock or serialization failure (another client locking the same
//! rows in another order) rolls the transaction back; the batch is tried
//! again at once, a few times, before the error reaches the drain.

use crate::error::SinkError;
use crate::event_rows::{EventRows, Journeys};
use crate::outcome_row::{OutcomeRow, parse_outcome};
use crate::snapshot_row::{SnapshotRow, parse_entry};
use serde_json::{Value, json};
use sluice_redis::StoredEntry;
use sqlx::PgPool;
use std::collections::{BTreeMap, HashMap, HashSet};

/// `BEGIN` and the commit's durability in one round trip.
const BEGIN: &str = "BEGIN; SET LOCAL synchronous_commit TO on";

const UPSERT: &str = "\
INSERT INTO sluice.snapshots AS s
    (mall_id, kind, resource_id, status, body, updated_date, version, event_ids, entry_id, written_at)
SELECT u.mall_id, u.kind, u.resource_id, u.status, u.body::jsonb, u.updated_date, u.version, u.event_ids, u.entry_id, now()
FROM UNNEST($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int8[], $8::jsonb[], $9::text[])
    AS u(mall_id, kind, resource_id, status, body, updated_date, version, event_ids, entry_id)
ON CONFLICT (mall_id, kind, resource_id) DO UPDATE SET
    status = excluded.status, body = excluded.body, updated_date = excluded.updated_date,
    version = excluded.version, event_ids = excluded.event_ids, entry_id = excluded.entry_id,
    written_at = excluded.written_at
WHERE excluded.version > s.version
RETURNING s.mall_id, s.kind, s.resource_id";

/// Of the snapshots not written, those an earlier transaction already
/// committed, with the outcome it recorded: `written` when the row still
/// carries the entry, else its events' outcome naming the entry.
const COMMITTED: &str = "\
SELECT x.entry_id, coalesce(
    (SELECT 'written' FROM sluice.snapshots s
     WHERE (s.mall_id, s.kind, s.resource_id, s.entry_id) = (x.mall_id, x.kind, x.resource_id, x.entry_id)),
    (SELECT e.outcome FROM sluice.events e
     WHERE e.event_id IN (SELECT jsonb_array_elements_text(x.event_ids)) AND e.entry_id = x.entry_id
     LIMIT 1)) AS outcome
FROM UNNEST($1::text[], $2::text[], $3::text[], $4::text[], $5::jsonb[])
    AS x(mall_id, kind, resource_id, entry_id, event_ids)";

const UNREADABLE: &str = "\
INSERT INTO sluice.unreadable_entries (stream, entry_id, fields, reason)
SELECT $1, u.entry_id, u.fields, u.reason
FROM UNNEST($2::text[], $3::jsonb[], $4::text[]) AS u(entry_id, fields, reason)
ON CONFLICT (stream, entry_id) DO NOTHING";

/// What a batch did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BatchOutcome {
    /// Rows inserted or replaced.
    pub written: Vec<SnapshotRow>,
    /// Snapshots not written: the table (or the batch) held a newer or equal version.
    pub superseded: Vec<SnapshotRow>,
    /// Entries an earlier transaction already committed (redelivered),
    /// with the outcome it recorded for them: nothing recorded again.
    pub redelivered: Vec<(SnapshotRow, String)>,
    /// Outcome entries (events parked in the dead-letter queue) recorded,
    /// now or by an earlier transaction.
    pub outcomes: Vec<OutcomeRow>,
    /// Entries kept in `sluice.unreadable_entries`.
    pub unreadable: usize,
}

/// SQLSTATEs after which the same transaction, run again, can succeed.
const TRANSIENT: &[&str] = &["40001", "40P01"];
/// Attempts at a batch before a transient error reaches the drain.
const ATTEMPTS: usize = 3;

/// Writes batches to `sluice.snapshots`.
#[derive(Debug, Clone)]
pub struct SnapshotWriter {
    pool: PgPool,
}

impl SnapshotWriter {
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Writes `entries`, read from `stream`, in one transaction, run again
    /// after a deadlock or serialization failure.
    pub async fn write(&self, stream: &str, entries: &[StoredEntry]) -> Result<BatchOutcome, SinkError> {
        self.write_with_journeys(stream, entries, &Journeys::new()).await
    }

    /// [`Self::write`], also recording each answered event's `journeys`
    /// entry stage by stage.
    pub async fn write_with_journeys(
        &self,
        stream: &str,
        entries: &[StoredEntry],
        journeys: &Journeys,
    ) -> Result<BatchOutcome, SinkError> {
        let mut attempt = 1;
        loop {
            match self.write_once(stream, entries, journeys).await {
                Err(SinkError::Database(e)) if attempt < ATTEMPTS && is_transient(&e) => {
                    tracing::info!(error = %e, attempt, "drain: batch rolled back; writing it again");
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    async fn write_once(
        &self,
        stream: &str,
        entries: &[StoredEntry],
        journeys: &Journeys,
    ) -> Result<BatchOutcome, SinkError> {
        let mut newest: BTreeMap<(String, String, String), SnapshotRow> = BTreeMap::new();
        let mut superseded = Vec::new();
        let mut unreadable = Vec::new();
        let mut outcomes = Vec::new();
        for entry in entries {
            if entry.is_outcome() {
                match parse_outcome(entry) {
                    Ok(outcome) => outcomes.push(outcome),
                    Err(reason) => unreadable.push((entry, reason)),
                }
                continue;
            }
            match parse_entry(entry) {
                Ok(row) => {
                    let key = (row.mall_id.clone(), row.kind.clone(), row.resource_id.clone());
                    match newest.remove(&key) {
                        Some(kept) if kept.version >= row.version => {
                            superseded.push(row);
                            newest.insert(key, kept);
                        }
                        Some(older) => {
                            superseded.push(older);
                            newest.insert(key, row);
                        }
                        None => {
                            newest.insert(key, row);
                        }
                    }
                }
                Err(reason) => unreadable.push((entry, reason)),
            }
        }
        let rows: Vec<SnapshotRow> = newest.into_values().collect();

        let mut tx = self.pool.begin_with(BEGIN).await?;
        let written_keys: HashSet<(String, String, String)> = if rows.is_empty() {
            HashSet::new()
        } else {
            sqlx::query_as::<_, (String, String, String)>(UPSERT)
                .bind(rows.iter().map(|r| r.mall_id.as_str()).collect::<Vec<_>>())
                .bind(rows.iter().map(|r| r.kind.as_str()).collect::<Vec<_>>())
                .bind(rows.iter().map(|r| r.resource_id.as_str()).collect::<Vec<_>>())
                .bind(rows.iter().map(|r| r.status.as_str()).collect::<Vec<_>>())
                .bind(rows.iter().map(|r| r.body.as_deref()).collect::<Vec<Option<&str>>>())
                .bind(rows.iter().map(|r| r.updated_date.as_deref()).collect::<Vec<_>>())
                .bind(rows.iter().map(|r| r.version).collect::<Vec<_>>())
                .bind(rows.iter().map(|r| json!(r.event_ids)).collect::<Vec<_>>())
                .bind(rows.iter().map(|r| r.entry_id.as_str()).collect::<Vec<_>>())
                .fetch_all(&mut *tx)
                .await?
                .into_iter()
                .collect()
        };
        let (written, older): (Vec<_>, Vec<_>) = rows
            .into_iter()
            .partition(|r| written_keys.contains(&(r.mall_id.clone(), r.kind.clone(), r.resource_id.clone())));
        superseded.extend(older);
        let redelivered = committed_before(&mut tx, &mut superseded).await?;

        let mut events = EventRows::default();
        let answered =
            written.iter().map(|row| ("written", row)).chain(superseded.iter().map(|row| ("superseded", row)));
        for (outcome, row) in answered {
            for id in &row.event_ids {
                events.journey(id, journeys);
                events.outcome(id, outcome, &row.entry_id, detail(row), None);
            }
        }
        for outcome in &outcomes {
            events.journey(&outcome.event_id, journeys);
            let detail = outcome.detail.clone();
            events.outcome(&outcome.event_id, &outcome.outcome, &outcome.entry_id, detail, Some(outcome.at_ms));
        }
        events.insert(&mut tx).await?;
        if !unreadable.is_empty() {
            sqlx::query(UNREADABLE)
                .bind(stream)
                .bind(unreadable.iter().map(|(e, _)| e.id.as_str()).collect::<Vec<_>>())
                .bind(unreadable.iter().map(|(e, _)| json!(e.fields)).collect::<Vec<_>>())
                .bind(unreadable.iter().map(|(_, reason)| reason.as_str()).collect::<Vec<_>>())
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(BatchOutcome { written, superseded, redelivered, outcomes, unreadable: unreadable.len() })
    }
}

/// Moves out of `superseded` the snapshots an earlier transaction already
/// committed, with the outcome it recorded.
async fn committed_before(
    tx: &mut sqlx::PgConnection,
    superseded: &mut Vec<SnapshotRow>,
) -> Result<Vec<(SnapshotRow, String)>, SinkError> {
    if superseded.is_empty() {
        return Ok(Vec::new());
    }
    let rows = &*superseded;
    let committed: HashMap<String, String> = sqlx::query_as::<_, (String, Option<String>)>(COMMITTED)
        .bind(rows.iter().map(|r| r.mall_id.as_str()).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.kind.as_str()).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.resource_id.as_str()).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.entry_id.as_str()).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| json!(r.event_ids)).collect::<Vec<_>>())
        .fetch_all(&mut *tx)
        .await?
        .into_iter()
        .filter_map(|(entry_id, outcome)| Some((entry_id, outcome?)))
        .collect();
    let (again, fresh): (Vec<_>, Vec<_>) =
        std::mem::take(superseded).into_iter().partition(|r| committed.contains_key(&r.entry_id));
    *superseded = fresh;
    Ok(again
        .into_iter()
        .map(|row| {
            let outcome = committed.get(&row.entry_id).cloned().unwrap_or_default();
            (row, outcome)
        })
        .collect())
}

/// A deadlock or a serialization failure: the transaction was rolled back
/// and may succeed if run again.
fn is_transient(e: &sqlx::Error) -> bool {
    e.as_database_error().and_then(|d| d.code()).is_some_and(|code| TRANSIENT.contains(&code.as_ref()))
}

/// What an event's outcome row says about the snapshot that answered it.
fn detail(row: &SnapshotRow) -> Value {
    json!({
        "mall_id": row.mall_id,
        "kind": row.kind,
        "resource_id": row.resource_id,
        "version": row.version,
        "entry_id": row.entry_id,
    })
}
