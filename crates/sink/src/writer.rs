//! One drained batch in one PostgreSQL transaction: the snapshots upserted
//! (a row is replaced only by a newer version), each answered event's
//! outcome recorded, unreadable entries kept. Nothing of a batch is
//! visible unless all of it committed, so acknowledging after the commit
//! never acknowledges what the database does not hold.
//!
//! Every statement takes whole arrays (`UNNEST`): one round trip each
//! whatever the batch's size. The upsert also records the `written`
//! outcome of each event a row it wrote answers, from the rows it
//! returns: a batch with nothing else to record (no superseded
//! snapshots, no journeys, no outcome entries) is that one statement, a
//! transaction of its own. Rows are sorted by key first (`batch`), so two drains
//! writing overlapping batches lock rows in the same order and cannot
//! deadlock on each other.
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
//! An outcome entry (an event dead-lettered, see
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

use crate::batch::Batch;
use crate::error::SinkError;
use crate::event_rows::{ENTRY_POSITION, EventRows, Journeys};
use crate::outcome_row::OutcomeRow;
use crate::snapshot_row::SnapshotRow;
use serde_json::Value;
use sluice_redis::StoredEntry;
use sqlx::PgPool;
use std::collections::HashMap;

/// `BEGIN` and the commit's durability in one round trip.
const BEGIN: &str = "BEGIN; SET LOCAL synchronous_commit TO on";

/// The upsert, and the `written` outcome of each event a written row
/// answers, in one statement: the outcome rows are built by PostgreSQL
/// from what the upsert returned, and the statement answers the entry ids
/// it wrote, as their places in the arrays (from 1). `$events_conflict` is what the outcome rows do on a key that
/// exists already (see [`Care`]); `$first` comes first in the answer.
macro_rules! upsert {
    ($events_conflict:literal, $first:literal) => {
        concat!(
            "\
WITH w AS (
    INSERT INTO sluice.snapshots AS s
        (mall_id, kind, resource_id, status, body, updated_date, version, event_ids, entry_id, written_at)
    SELECT u.mall_id, u.kind, u.resource_id, u.status, u.body::jsonb, u.updated_date, u.version,
        u.event_ids::jsonb, u.entry_id, now()
    FROM UNNEST($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int8[], $8::text[], $9::text[])
        AS u(mall_id, kind, resource_id, status, body, updated_date, version, event_ids, entry_id)
    ON CONFLICT (mall_id, kind, resource_id) DO UPDATE SET
        status = excluded.status, body = excluded.body, updated_date = excluded.updated_date,
        version = excluded.version, event_ids = excluded.event_ids, entry_id = excluded.entry_id,
        written_at = excluded.written_at
    WHERE excluded.version > s.version
    RETURNING s.mall_id, s.kind, s.resource_id, s.version, s.entry_id
), answered AS (
    INSERT INTO sluice.events (event_id, outcome, entry_id, position, at, mall_id, kind, resource_id, version)
    SELECT a.event_id, 'written', w.entry_id, $12, now(), w.mall_id, w.kind, w.resource_id, w.version
    FROM UNNEST($10::text[], $11::text[]) AS a(event_id, entry_id) JOIN w ON w.entry_id = a.entry_id
    ",
            $events_conflict,
            "
)
SELECT ",
            $first,
            "coalesce(array_agg(u.place::int4), '{}') FROM w
JOIN UNNEST($9::text[]) WITH ORDINALITY AS u(entry_id, place) ON u.entry_id = w.entry_id"
        )
    };
}

/// The upsert as a transaction of its own (see [`SnapshotWriter::write_batch`]):
/// it sets the commit's durability itself, for the commit at its end (a
/// `SET LOCAL` needs a `BEGIN` before it, and so two more round trips).
const UPSERT_ALONE: &str = upsert!("", "set_config('synchronous_commit', 'on', true), ");

/// Of the snapshots not written, those an earlier transaction already
/// committed, with the outcome it recorded: `written` when the row still
/// carries the entry, else its events' outcome naming the entry.
const COMMITTED: &str = "\
SELECT x.entry_id, coalesce(
    (SELECT 'written' FROM sluice.snapshots s
     WHERE (s.mall_id, s.kind, s.resource_id, s.entry_id) = (x.mall_id, x.kind, x.resource_id, x.entry_id)),
    (SELECT e.outcome FROM sluice.events e
     WHERE e.event_id IN (SELECT jsonb_array_elements_text(x.event_ids::jsonb)) AND e.entry_id = x.entry_id
     LIMIT 1)) AS outcome
FROM UNNEST($1::text[], $2::text[], $3::text[], $4::text[], $5::text[])
    AS x(mall_id, kind, resource_id, entry_id, event_ids)";

const UNREADABLE: &str = "\
INSERT INTO sluice.unreadable_entries (stream, entry_id, fields, reason)
SELECT $1, u.entry_id, u.fields, u.reason
FROM UNNEST($2::text[], $3::jsonb[], $4::text[]) AS u(entry_id, fields, reason)
ON CONFLICT (stream, entry_id) DO NOTHING";

/// How a batch's event rows meet a key that exists already.
///
/// `Fast` inserts them plainly. A snapshot the upsert writes was never
/// written before (a row is only ever replaced by a newer version), so no
/// transaction can have recorded its entry as written; and an event's
/// journey is copied once, with the one snapshot that answers it (each
/// event is one resource's work item; a redelivered entry is recognised
/// and records nothing). Checking each row for a conflict anyway cost
/// PostgreSQL more than the insert itself: a fifth of its work in a
/// drain whose events carry their journeys.
/// `Careful` skips existing keys: the batch is written again that way
/// after the fast way met one (a person deleted a snapshot row, so an old
/// entry was written again; an event dead-lettered, redriven and then answered,
/// its journey copied a second time; a redelivered outcome entry): a rare
/// batch runs twice instead of every row paying for the check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Care {
    Fast,
    Careful,
}

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
    /// Outcome entries (events dead-lettered) recorded,
    /// now or by an earlier transaction.
    pub outcomes: Vec<OutcomeRow>,
    /// Entries kept in `sluice.unreadable_entries`.
    pub unreadable: usize,
}

/// SQLSTATEs after which the same transaction, run again, can succeed.
const TRANSIENT: &[&str] = &["40001", "40P01"];
/// Attempts at a batch before a transient error reaches the drain.
const ATTEMPTS: usize = 3;
/// A key that exists already: an outcome row the fast way met (see [`Care`]).
const UNIQUE_VIOLATION: &str = "23505";

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
    pub async fn write(&self, stream: &str, entries: Vec<StoredEntry>) -> Result<BatchOutcome, SinkError> {
        self.write_with_journeys(stream, entries, &Journeys::new()).await
    }

    /// [`Self::write`], also recording each answered event's `journeys`
    /// entry stage by stage.
    pub async fn write_with_journeys(
        &self,
        stream: &str,
        entries: Vec<StoredEntry>,
        journeys: &Journeys,
    ) -> Result<BatchOutcome, SinkError> {
        self.write_batch(stream, Batch::read(entries), journeys).await
    }

    /// [`Self::write_with_journeys`] of entries already read into a batch.
    pub(crate) async fn write_batch(
        &self,
        stream: &str,
        batch: Batch,
        journeys: &Journeys,
    ) -> Result<BatchOutcome, SinkError> {
        // Most batches hold new snapshots of distinct resources and nothing
        // else to record: their upsert is their transaction, one round
        // trip instead of three (BEGIN, the upsert, COMMIT), and
        // PostgreSQL never waits for us in the middle of one. The rows it
        // did not write (replaced since, or drained before) then get the
        // rest in a transaction of its own: nothing of theirs committed
        // with the upsert, and an entry is acknowledged only after both.
        // Should the upsert fail, the batch is written the usual way.
        let upserted = self.upsert_alone(&batch, journeys).await.unwrap_or_else(|e| {
            tracing::debug!(error = %e, "drain: the batch's upsert alone failed; writing it in one transaction");
            None
        });
        let (mut attempt, mut care) = (1, Care::Fast);
        let (written, redelivered) = loop {
            if let Some(written) = upserted.as_ref().filter(|written| written.iter().all(|w| *w)) {
                break (written.clone(), HashMap::new());
            }
            match self.write_once(stream, &batch, journeys, care, upserted.as_deref()).await {
                Err(SinkError::Database(e)) if care == Care::Fast && has_code(&e, UNIQUE_VIOLATION) => {
                    tracing::info!(error = %e, "drain: an outcome was recorded before; writing the batch again, skipping it");
                    care = Care::Careful;
                }
                Err(SinkError::Database(e)) if attempt < ATTEMPTS && TRANSIENT.iter().any(|c| has_code(&e, c)) => {
                    tracing::info!(error = %e, attempt, "drain: batch rolled back; writing it again");
                    attempt += 1;
                }
                other => break other?,
            }
        };
        let Batch { rows, mut superseded, outcomes, unreadable } = batch;
        let (written, unwritten): (Vec<_>, Vec<_>) = rows.into_iter().zip(written).partition(|(_, wrote)| *wrote);
        superseded.extend(unwritten.into_iter().map(|(row, _)| row));
        let written = written.into_iter().map(|(row, _)| row).collect();
        let redelivered = superseded
            .extract_if(.., |r| redelivered.contains_key(&r.entry_id))
            .map(|row| {
                let outcome = redelivered[&row.entry_id].clone();
                (row, outcome)
            })
            .collect();
        Ok(BatchOutcome { written, superseded, redelivered, outcomes, unreadable: unreadable.len() })
    }

    /// The upsert alone, in a transaction of its own, when the batch has
    /// nothing else to record: which rows it wrote. `None` when the batch
    /// has more.
    async fn upsert_alone(&self, batch: &Batch, journeys: &Journeys) -> Result<Option<Vec<bool>>, SinkError> {
        let journeyed = |row: &SnapshotRow| row.event_ids.iter().any(|id| journeys.contains_key(id));
        let more = !(batch.superseded.is_empty() && batch.outcomes.is_empty() && batch.unreadable.is_empty());
        if batch.rows.is_empty() || more || (!journeys.is_empty() && batch.rows.iter().any(journeyed)) {
            return Ok(None);
        }
        let (_, places): (String, Vec<i32>) =
            bind_upsert(sqlx::query_as(UPSERT_ALONE), batch).fetch_one(&self.pool).await?;
        Ok(Some(written_places(batch, places)))
    }

    /// One transaction: the entry ids written, and those an earlier
    /// transaction had committed with the outcome it recorded. With
    /// `upserted`, the upsert committed already and wrote those rows.
    async fn write_once(
        &self,
        stream: &str,
        batch: &Batch,
        journeys: &Journeys,
        care: Care,
        upserted: Option<&[bool]>,
    ) -> Result<(Vec<bool>, HashMap<String, String>), SinkError> {
        let mut tx = self.pool.begin_with(BEGIN).await?;
        let mut written = upserted.map_or_else(|| vec![false; batch.rows.len()], <[bool]>::to_vec);
        if upserted.is_none() && !batch.rows.is_empty() {
            let upsert = match care {
                Care::Fast => upsert!("", ""),
                Care::Careful => upsert!("ON CONFLICT (event_id, outcome, entry_id, position) DO NOTHING", ""),
            };
            let (places,): (Vec<i32>,) = bind_upsert(sqlx::query_as(upsert), batch).fetch_one(&mut *tx).await?;
            written = written_places(batch, places);
        }
        let unwritten_rows = batch.rows.iter().zip(&written).filter(|(_, wrote)| !**wrote).map(|(row, _)| row);
        let not_written: Vec<&SnapshotRow> = batch.superseded.iter().chain(unwritten_rows).collect();
        let redelivered = committed_before(&mut tx, &not_written).await?;

        let mut events = EventRows::default();
        for (row, _) in batch.rows.iter().zip(&written).filter(|(_, wrote)| **wrote) {
            // The upsert recorded their outcome; their journeys remain.
            row.event_ids.iter().for_each(|id| events.journey(id, journeys));
        }
        for row in not_written.into_iter().filter(|r| !redelivered.contains_key(&r.entry_id)) {
            for id in &row.event_ids {
                events.journey(id, journeys);
                events.snapshot_outcome(id, "superseded", row);
            }
        }
        for outcome in &batch.outcomes {
            record_outcome(&mut events, outcome, journeys);
        }
        events.insert(&mut tx, care).await?;
        if !batch.unreadable.is_empty() {
            let unreadable = &batch.unreadable;
            sqlx::query(UNREADABLE)
                .bind(stream)
                .bind(unreadable.iter().map(|(e, _)| e.id.as_str()).collect::<Vec<_>>())
                .bind(unreadable.iter().map(|(e, _)| storable(&e.fields)).collect::<Vec<_>>())
                .bind(unreadable.iter().map(|(_, reason)| reason.as_str()).collect::<Vec<_>>())
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok((written, redelivered))
    }
}

/// The upsert's parameters: the batch's rows, column by column, and the
/// (event, entry) pairs they answer.
fn bind_upsert<'q, O>(
    query: sqlx::query::QueryAs<'q, sqlx::Postgres, O, sqlx::postgres::PgArguments>,
    batch: &'q Batch,
) -> sqlx::query::QueryAs<'q, sqlx::Postgres, O, sqlx::postgres::PgArguments> {
    let rows = &batch.rows;
    let (event_ids, entry_ids) = batch.answered();
    query
        .bind(rows.iter().map(|r| r.mall_id.as_str()).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.kind.as_str()).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.resource_id.as_str()).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.status.as_str()).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.body.as_deref()).collect::<Vec<Option<&str>>>())
        .bind(rows.iter().map(|r| r.updated_date.as_deref()).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.version).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.event_ids_json.as_str()).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.entry_id.as_str()).collect::<Vec<_>>())
        .bind(event_ids)
        .bind(entry_ids)
        .bind(ENTRY_POSITION)
}

/// Which of the batch's rows the upsert wrote, from the places it answered.
fn written_places(batch: &Batch, places: Vec<i32>) -> Vec<bool> {
    let mut written = vec![false; batch.rows.len()];
    for place in places {
        written[place as usize - 1] = true;
    }
    written
}

/// A dead-lettered event: its journey, then its outcome at the time Redis appended it.
fn record_outcome<'a>(events: &mut EventRows<'a>, outcome: &'a OutcomeRow, journeys: &'a Journeys) {
    events.journey(&outcome.event_id, journeys);
    events.outcome(&outcome.event_id, &outcome.outcome, &outcome.entry_id, &outcome.detail, Some(outcome.at_ms));
}

/// Of the snapshots not written, the entry ids an earlier transaction
/// already committed, with the outcome it recorded.
async fn committed_before(
    tx: &mut sqlx::PgConnection,
    rows: &[&SnapshotRow],
) -> Result<HashMap<String, String>, SinkError> {
    if rows.is_empty() {
        return Ok(HashMap::new());
    }
    Ok(sqlx::query_as::<_, (String, Option<String>)>(COMMITTED)
        .bind(rows.iter().map(|r| r.mall_id.as_str()).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.kind.as_str()).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.resource_id.as_str()).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.entry_id.as_str()).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.event_ids_json.as_str()).collect::<Vec<_>>())
        .fetch_all(&mut *tx)
        .await?
        .into_iter()
        .filter_map(|(entry_id, outcome)| Some((entry_id, outcome?)))
        .collect())
}

/// An unreadable entry's fields as jsonb can hold them: a NUL character
/// (which jsonb refuses, failing the batch) shown as U+FFFD.
fn storable(fields: &HashMap<String, String>) -> Value {
    let value = |v: &String| if v.contains('\0') { v.replace('\0', "\u{FFFD}") } else { v.clone() };
    fields.iter().map(|(k, v)| (k.clone(), Value::String(value(v)))).collect::<serde_json::Map<_, _>>().into()
}

/// Whether PostgreSQL answered `e` with SQLSTATE `code`.
fn has_code(e: &sqlx::Error, code: &str) -> bool {
    e.as_database_error().and_then(|d| d.code()).is_some_and(|c| c == code)
}
