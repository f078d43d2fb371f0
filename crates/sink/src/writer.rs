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
//! once the 7-day trace has expired.
//!
//! A deadlock or serialization failure (another client locking the same
//! rows in another order) rolls the transaction back; the batch is tried
//! again at once, a few times, before the error reaches the drain.

use crate::error::SinkError;
use crate::snapshot_row::{SnapshotRow, parse_entry};
use serde_json::{Value, json};
use sluice_redis::{StoredEntry, TraceEntry};
use sqlx::PgPool;
use std::collections::{BTreeMap, HashMap, HashSet};

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
     WHERE e.event_id IN (SELECT jsonb_array_elements_text(x.event_ids)) AND e.detail->>'entry_id' = x.entry_id
     LIMIT 1)) AS outcome
FROM UNNEST($1::text[], $2::text[], $3::text[], $4::text[], $5::jsonb[])
    AS x(mall_id, kind, resource_id, entry_id, event_ids)";

/// An outcome without a time of its own (the drain's) is stamped with the
/// transaction's; a journey's stage keeps Redis's time (ms since the epoch).
const EVENTS: &str = "\
INSERT INTO sluice.events (event_id, outcome, at, detail, position)
SELECT e.event_id, e.outcome, coalesce(to_timestamp(e.at_ms / 1000.0), now()), e.detail, e.position
FROM UNNEST($1::text[], $2::text[], $3::jsonb[], $4::int8[], $5::int4[]) AS e(event_id, outcome, detail, at_ms, position)
ON CONFLICT (event_id, outcome) DO NOTHING";

/// The stages the drain records itself: a journey's copy of them (a trace
/// written by an earlier pass) is not taken.
const DRAIN_STAGES: &[&str] = &["written", "superseded"];

/// Each event's trace before the drain, by event id.
pub type Journeys = HashMap<String, Vec<TraceEntry>>;

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
        for entry in entries {
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

        let mut tx = self.pool.begin().await?;
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

        // Sorted, so two transactions recording the same events (a
        // redelivery racing its first delivery) take their locks in one order.
        let answered =
            written.iter().map(|row| ("written", row)).chain(superseded.iter().map(|row| ("superseded", row)));
        let mut outcomes: BTreeMap<(&str, &str), (Value, Option<i64>, i32)> = BTreeMap::new();
        for (outcome, row) in answered {
            for id in &row.event_ids {
                let journey = journeys.get(id).map_or(&[][..], Vec::as_slice);
                let last = i32::try_from(journey.len()).unwrap_or(i32::MAX);
                outcomes.insert((id.as_str(), outcome), (detail(row), None, last));
                for (position, step) in (0..).zip(journey) {
                    if !DRAIN_STAGES.contains(&step.stage.as_str()) {
                        // The first time a stage was reached is the one kept.
                        let at = i64::try_from(step.at_ms).ok();
                        outcomes.entry((id.as_str(), step.stage.as_str())).or_insert((
                            step.detail.clone(),
                            at,
                            position,
                        ));
                    }
                }
            }
        }
        if !outcomes.is_empty() {
            let (keys, values): (Vec<_>, Vec<_>) = outcomes.into_iter().unzip();
            sqlx::query(EVENTS)
                .bind(keys.iter().map(|(id, _)| *id).collect::<Vec<_>>())
                .bind(keys.iter().map(|(_, outcome)| *outcome).collect::<Vec<_>>())
                .bind(values.iter().map(|(detail, _, _)| detail.clone()).collect::<Vec<_>>())
                .bind(values.iter().map(|(_, at, _)| *at).collect::<Vec<_>>())
                .bind(values.iter().map(|(_, _, position)| *position).collect::<Vec<_>>())
                .execute(&mut *tx)
                .await?;
        }
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
        Ok(BatchOutcome { written, superseded, redelivered, unreadable: unreadable.len() })
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
