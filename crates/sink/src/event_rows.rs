//! The `sluice.events` rows of one batch, keyed as the table is (migration
//! 0003): by event, outcome and source. A source is the stream entry the
//! drain recorded the outcome from (written, superseded, dead-lettered), or the
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
use crate::writer::Care;
use serde_json::Value;
use sluice_redis::TraceEntry;
use std::collections::{BTreeMap, HashMap};

/// An outcome without a time of its own (the drain's) is stamped with the
/// transaction's; a journey's stage and a dead-lettered event keep Redis's time
/// (ms since the epoch). A snapshot's outcome names its row in columns,
/// with an empty `detail` (see migration 0005). `$on_conflict` is what a
/// row does on a key that exists already (see [`Care`]).
macro_rules! events {
    ($on_conflict:literal) => {
        concat!(
            "\
INSERT INTO sluice.events (event_id, outcome, entry_id, position, at, detail, mall_id, kind, resource_id, version)
SELECT e.event_id, e.outcome, e.entry_id, e.position, coalesce(to_timestamp(e.at_ms / 1000.0), now()),
    coalesce(e.detail, '{}'::jsonb), e.mall_id, e.kind, e.resource_id, e.version
FROM UNNEST($1::text[], $2::text[], $3::text[], $4::int4[], $5::int8[], $6::jsonb[], $7::text[], $8::text[], $9::text[], $10::int8[])
    AS e(event_id, outcome, entry_id, position, at_ms, detail, mall_id, kind, resource_id, version)
",
            $on_conflict
        )
    };
}

/// The position of an outcome the drain records from an entry: after
/// every stage of the journey recorded in the same millisecond.
pub const ENTRY_POSITION: i32 = i32::MAX;

/// The stages the drain records itself: a journey's copy of them (a trace
/// written by an earlier pass) is not taken.
const DRAIN_STAGES: &[&str] = &["written", "superseded"];

/// Each event's trace before the drain, by event id.
pub type Journeys = HashMap<String, Vec<TraceEntry>>;

/// (event id, outcome, entry id, position): the table's key.
type Key<'a> = (&'a str, &'a str, &'a str, i32);

/// One row's values besides its key, borrowed from the batch and the
/// journeys it is built from (a journey is most of a batch's event rows:
/// nothing of it is copied).
#[derive(Debug)]
struct EventRow<'a> {
    /// `None` for a snapshot's outcome: its row is named in columns.
    detail: Option<&'a Value>,
    /// `None`: the transaction's time.
    at_ms: Option<i64>,
    snapshot: Option<&'a SnapshotRow>,
}

/// A batch's event rows. Sorted by key, so two transactions recording the
/// same events (a redelivery racing its first delivery) take their locks
/// in one order.
#[derive(Debug, Default)]
pub(crate) struct EventRows<'a> {
    rows: BTreeMap<Key<'a>, EventRow<'a>>,
}

impl<'a> EventRows<'a> {
    /// `event_id`'s `outcome`, recorded from stream entry `entry_id`, at
    /// `at_ms` (`None`: the transaction's time).
    pub(crate) fn outcome(
        &mut self,
        event_id: &'a str,
        outcome: &'a str,
        entry_id: &'a str,
        detail: &'a Value,
        at_ms: Option<i64>,
    ) {
        let key = (event_id, outcome, entry_id, ENTRY_POSITION);
        self.rows.insert(key, EventRow { detail: Some(detail), at_ms, snapshot: None });
    }

    /// `event_id`'s `outcome` by `row`, the snapshot that answered it, at
    /// the transaction's time.
    pub(crate) fn snapshot_outcome(&mut self, event_id: &'a str, outcome: &'a str, row: &'a SnapshotRow) {
        let key = (event_id, outcome, row.entry_id.as_str(), ENTRY_POSITION);
        self.rows.insert(key, EventRow { detail: None, at_ms: None, snapshot: Some(row) });
    }

    /// Each stage of `event_id`'s journey, at its place in the trace.
    pub(crate) fn journey(&mut self, event_id: &'a str, journeys: &'a Journeys) {
        let Some(journey) = journeys.get(event_id) else { return };
        for (position, step) in (0..).zip(journey) {
            if !DRAIN_STAGES.contains(&step.stage.as_str()) {
                let key = (event_id, step.stage.as_str(), "", position);
                self.rows.entry(key).or_insert_with(|| EventRow {
                    detail: Some(&step.detail),
                    at_ms: i64::try_from(step.at_ms).ok(),
                    snapshot: None,
                });
            }
        }
    }

    /// Inserts the rows in one statement; with [`Care::Careful`], only
    /// those not there yet.
    pub(crate) async fn insert(self, tx: &mut sqlx::PgConnection, care: Care) -> Result<(), SinkError> {
        if self.rows.is_empty() {
            return Ok(());
        }
        let (keys, values): (Vec<_>, Vec<_>) = self.rows.into_iter().unzip();
        let snapshot = |part: fn(&SnapshotRow) -> &str| -> Vec<Option<&str>> {
            values.iter().map(|row| row.snapshot.map(part)).collect()
        };
        let statement = match care {
            Care::Fast => events!(""),
            Care::Careful => events!("ON CONFLICT (event_id, outcome, entry_id, position) DO NOTHING"),
        };
        sqlx::query(statement)
            .bind(keys.iter().map(|(id, _, _, _)| *id).collect::<Vec<_>>())
            .bind(keys.iter().map(|(_, outcome, _, _)| *outcome).collect::<Vec<_>>())
            .bind(keys.iter().map(|(_, _, entry, _)| *entry).collect::<Vec<_>>())
            .bind(keys.iter().map(|(_, _, _, position)| *position).collect::<Vec<_>>())
            .bind(values.iter().map(|row| row.at_ms).collect::<Vec<_>>())
            .bind(values.iter().map(|row| row.detail).collect::<Vec<_>>())
            .bind(snapshot(|s| &s.mall_id))
            .bind(snapshot(|s| &s.kind))
            .bind(snapshot(|s| &s.resource_id))
            .bind(values.iter().map(|row| row.snapshot.map(|s| s.version)).collect::<Vec<_>>())
            .execute(&mut *tx)
            .await?;
        Ok(())
    }
}
