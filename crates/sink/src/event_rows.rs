//! The `sluice.events` rows of one batch, keyed as the table is (migration
//! 0003): by event, outcome and source. A source is the stream entry the
//! drain recorded the outcome from (written, superseded, parked), or the
//! stage's place in the event's Redis trace (its journey: received,
//! enqueued or coalesced, fetched, stored, failed, …). So two snapshots
//! answering one event both stay, and a journey copied again (a second
//! snapshot answering the event, a redelivered entry) adds nothing.
//!
//! A trace keeps its latest 500 entries (`sluice_redis::trace`): an event
//! retried past that has its older stages shifted, and copied again, they
//! may be recorded twice.

use crate::error::SinkError;
use crate::snapshot_row::SnapshotRow;
use serde_json::Value;
use sluice_redis::TraceEntry;
use std::collections::{BTreeMap, HashMap};

/// An outcome without a time of its own (the drain's) is stamped with the
/// transaction's; a journey's stage and a parked event keep Redis's time
/// (ms since the epoch). A snapshot's outcome names its row in columns,
/// with an empty `detail` (see migration 0005).
const EVENTS: &str = "\
INSERT INTO sluice.events (event_id, outcome, entry_id, position, at, detail, mall_id, kind, resource_id, version)
SELECT e.event_id, e.outcome, e.entry_id, e.position, coalesce(to_timestamp(e.at_ms / 1000.0), now()),
    coalesce(e.detail, '{}'::jsonb), e.mall_id, e.kind, e.resource_id, e.version
FROM UNNEST($1::text[], $2::text[], $3::text[], $4::int4[], $5::int8[], $6::jsonb[], $7::text[], $8::text[], $9::text[], $10::int8[])
    AS e(event_id, outcome, entry_id, position, at_ms, detail, mall_id, kind, resource_id, version)
ON CONFLICT (event_id, outcome, entry_id, position) DO NOTHING";

/// The position of an outcome the drain records from an entry: after
/// every stage of the journey recorded in the same millisecond.
pub const ENTRY_POSITION: i32 = i32::MAX;

/// The stages the drain records itself: a journey's copy of them (a trace
/// written by an earlier pass) is not taken.
const DRAIN_STAGES: &[&str] = &["written", "superseded"];

/// Each event's trace before the drain, by event id.
pub type Journeys = HashMap<String, Vec<TraceEntry>>;

/// (event id, outcome, entry id, position) → what the row holds.
type Rows = BTreeMap<(String, String, String, i32), EventRow>;

/// One row's values besides its key.
#[derive(Debug)]
struct EventRow {
    /// `None` for a snapshot's outcome: its row is named in columns.
    detail: Option<Value>,
    /// `None`: the transaction's time.
    at_ms: Option<i64>,
    snapshot: Option<SnapshotRef>,
}

/// The snapshot row an outcome names: mall, kind, resource id, version.
type SnapshotRef = (String, String, String, i64);

/// A batch's event rows. Sorted by key, so two transactions recording the
/// same events (a redelivery racing its first delivery) take their locks
/// in one order.
#[derive(Debug, Default)]
pub struct EventRows {
    rows: Rows,
}

impl EventRows {
    /// `event_id`'s `outcome`, recorded from stream entry `entry_id`, at
    /// `at_ms` (`None`: the transaction's time).
    pub fn outcome(&mut self, event_id: &str, outcome: &str, entry_id: &str, detail: Value, at_ms: Option<i64>) {
        let key = (event_id.to_owned(), outcome.to_owned(), entry_id.to_owned(), ENTRY_POSITION);
        self.rows.insert(key, EventRow { detail: Some(detail), at_ms, snapshot: None });
    }

    /// `event_id`'s `outcome` by `row`, the snapshot that answered it, at
    /// the transaction's time.
    pub fn snapshot_outcome(&mut self, event_id: &str, outcome: &str, row: &SnapshotRow) {
        let key = (event_id.to_owned(), outcome.to_owned(), row.entry_id.clone(), ENTRY_POSITION);
        let snapshot = (row.mall_id.clone(), row.kind.clone(), row.resource_id.clone(), row.version);
        self.rows.insert(key, EventRow { detail: None, at_ms: None, snapshot: Some(snapshot) });
    }

    /// Each stage of `event_id`'s journey, at its place in the trace.
    pub fn journey(&mut self, event_id: &str, journeys: &Journeys) {
        let Some(journey) = journeys.get(event_id) else { return };
        for (position, step) in (0..).zip(journey) {
            if !DRAIN_STAGES.contains(&step.stage.as_str()) {
                let key = (event_id.to_owned(), step.stage.clone(), String::new(), position);
                self.rows.entry(key).or_insert_with(|| EventRow {
                    detail: Some(step.detail.clone()),
                    at_ms: i64::try_from(step.at_ms).ok(),
                    snapshot: None,
                });
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Inserts the rows not there yet, in one statement.
    pub async fn insert(self, tx: &mut sqlx::PgConnection) -> Result<(), SinkError> {
        if self.rows.is_empty() {
            return Ok(());
        }
        let (keys, values): (Vec<_>, Vec<_>) = self.rows.into_iter().unzip();
        let snapshot = |part: fn(&SnapshotRef) -> &str| -> Vec<Option<&str>> {
            values.iter().map(|row| row.snapshot.as_ref().map(part)).collect()
        };
        sqlx::query(EVENTS)
            .bind(keys.iter().map(|(id, _, _, _)| id.as_str()).collect::<Vec<_>>())
            .bind(keys.iter().map(|(_, outcome, _, _)| outcome.as_str()).collect::<Vec<_>>())
            .bind(keys.iter().map(|(_, _, entry, _)| entry.as_str()).collect::<Vec<_>>())
            .bind(keys.iter().map(|(_, _, _, position)| *position).collect::<Vec<_>>())
            .bind(values.iter().map(|row| row.at_ms).collect::<Vec<_>>())
            .bind(values.iter().map(|row| row.detail.as_ref()).collect::<Vec<_>>())
            .bind(snapshot(|s| &s.0))
            .bind(snapshot(|s| &s.1))
            .bind(snapshot(|s| &s.2))
            .bind(values.iter().map(|row| row.snapshot.as_ref().map(|s| s.3)).collect::<Vec<_>>())
            .execute(&mut *tx)
            .await?;
        Ok(())
    }
}
