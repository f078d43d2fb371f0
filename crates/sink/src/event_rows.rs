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
use serde_json::Value;
use sluice_redis::TraceEntry;
use std::collections::{BTreeMap, HashMap};

/// An outcome without a time of its own (the drain's) is stamped with the
/// transaction's; a journey's stage and a parked event keep Redis's time
/// (ms since the epoch).
const EVENTS: &str = "\
INSERT INTO sluice.events (event_id, outcome, entry_id, position, at, detail)
SELECT e.event_id, e.outcome, e.entry_id, e.position, coalesce(to_timestamp(e.at_ms / 1000.0), now()), e.detail
FROM UNNEST($1::text[], $2::text[], $3::text[], $4::int4[], $5::int8[], $6::jsonb[])
    AS e(event_id, outcome, entry_id, position, at_ms, detail)
ON CONFLICT (event_id, outcome, entry_id, position) DO NOTHING";

/// The position of an outcome the drain records from an entry: after
/// every stage of the journey recorded in the same millisecond.
pub const ENTRY_POSITION: i32 = i32::MAX;

/// The stages the drain records itself: a journey's copy of them (a trace
/// written by an earlier pass) is not taken.
const DRAIN_STAGES: &[&str] = &["written", "superseded"];

/// Each event's trace before the drain, by event id.
pub type Journeys = HashMap<String, Vec<TraceEntry>>;

/// (event id, outcome, entry id, position) → (detail, at in ms).
type Rows = BTreeMap<(String, String, String, i32), (Value, Option<i64>)>;

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
        self.rows.insert(key, (detail, at_ms));
    }

    /// Each stage of `event_id`'s journey, at its place in the trace.
    pub fn journey(&mut self, event_id: &str, journeys: &Journeys) {
        let Some(journey) = journeys.get(event_id) else { return };
        for (position, step) in (0..).zip(journey) {
            if !DRAIN_STAGES.contains(&step.stage.as_str()) {
                let key = (event_id.to_owned(), step.stage.clone(), String::new(), position);
                self.rows.entry(key).or_insert_with(|| (step.detail.clone(), i64::try_from(step.at_ms).ok()));
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
        sqlx::query(EVENTS)
            .bind(keys.iter().map(|(id, _, _, _)| id.as_str()).collect::<Vec<_>>())
            .bind(keys.iter().map(|(_, outcome, _, _)| outcome.as_str()).collect::<Vec<_>>())
            .bind(keys.iter().map(|(_, _, entry, _)| entry.as_str()).collect::<Vec<_>>())
            .bind(keys.iter().map(|(_, _, _, position)| *position).collect::<Vec<_>>())
            .bind(values.iter().map(|(_, at)| *at).collect::<Vec<_>>())
            .bind(values.into_iter().map(|(detail, _)| detail).collect::<Vec<_>>())
            .execute(&mut *tx)
            .await?;
        Ok(())
    }
}
