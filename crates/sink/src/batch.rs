//! A drained batch, read once from its stream entries: the snapshots to
//! upsert (the newest of each resource, in key order), the older ones the
//! batch itself supersedes, the outcome entries, and the entries that are
//! neither. A transaction rolled back and run again writes the same batch
//! without reading the entries again.

use crate::outcome_row::{OutcomeRow, parse_outcome};
use crate::snapshot_row::{SnapshotRow, into_row};
use sluice_redis::StoredEntry;

#[derive(Debug, Default)]
pub(crate) struct Batch {
    /// One snapshot per resource, the newest, sorted by key: two drains
    /// writing overlapping batches lock rows in the same order, and
    /// PostgreSQL refuses to update one row twice in a statement.
    pub(crate) rows: Vec<SnapshotRow>,
    /// Snapshots of a resource the batch also holds a newer one of.
    pub(crate) superseded: Vec<SnapshotRow>,
    /// Outcome entries: events dead-lettered (given up to the dead-letter queue).
    pub(crate) outcomes: Vec<OutcomeRow>,
    /// Entries that are neither, with why.
    pub(crate) unreadable: Vec<(StoredEntry, String)>,
}

impl Batch {
    pub(crate) fn read(entries: Vec<StoredEntry>) -> Self {
        let mut batch = Batch::default();
        let mut snapshots = Vec::with_capacity(entries.len());
        for entry in entries {
            if entry.is_outcome() {
                match parse_outcome(&entry) {
                    Ok(outcome) => batch.outcomes.push(outcome),
                    Err(reason) => batch.unreadable.push((entry, reason)),
                }
                continue;
            }
            match into_row(entry) {
                Ok(row) => snapshots.push(row),
                Err(unreadable) => batch.unreadable.push(unreadable),
            }
        }
        // By key, the newest first; of equal versions the one read first
        // (a stable sort). Sorting in place compares the rows' own keys: no
        // key is copied per row.
        snapshots.sort_by(|a, b| a.key().cmp(&b.key()).then(b.version.cmp(&a.version)));
        batch.rows.reserve(snapshots.len());
        for row in snapshots {
            match batch.rows.last() {
                Some(kept) if kept.key() == row.key() => batch.superseded.push(row),
                _ => batch.rows.push(row),
            }
        }
        batch
    }

    /// The events the batch concerns: those its snapshots answer, written
    /// or not, and those its outcome entries record.
    pub(crate) fn concerned_events(&self) -> impl Iterator<Item = &str> {
        let answered =
            self.rows.iter().chain(&self.superseded).flat_map(|row| row.event_ids.iter().map(String::as_str));
        answered.chain(self.outcomes.iter().map(|outcome| outcome.event_id.as_str()))
    }

    /// Each (event id, entry id) the rows answer, an event named twice in
    /// one entry once: the `written` outcomes the upsert records.
    pub(crate) fn answered(&self) -> (Vec<&str>, Vec<&str>) {
        let mut pairs = (Vec::with_capacity(self.rows.len()), Vec::with_capacity(self.rows.len()));
        for row in &self.rows {
            for (i, id) in row.event_ids.iter().enumerate() {
                if !row.event_ids[..i].contains(id) {
                    pairs.0.push(id.as_str());
                    pairs.1.push(row.entry_id.as_str());
                }
            }
        }
        pairs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(id: &str, resource: &str, version: i64) -> StoredEntry {
        let fields = [
            ("mall_id", "m1"),
            ("kind", "product"),
            ("id", resource),
            ("status", "found"),
            ("updated_date", ""),
            ("event_ids", &format!("[\"e-{id}\"]")),
            ("fetched_at_ms", &version.to_string()),
            ("body", "{}"),
        ];
        let fields = fields.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        StoredEntry { id: id.to_owned(), fields }
    }

    #[test]
    fn the_newest_snapshot_of_each_resource_is_kept_in_key_order_and_a_tie_keeps_the_first_read() {
        let batch = Batch::read(vec![
            snapshot("1-0", "9", 5),
            snapshot("2-0", "10", 2),
            snapshot("3-0", "9", 7),
            snapshot("4-0", "10", 2),
            snapshot("5-0", "9", 6),
        ]);
        let kept: Vec<_> = batch.rows.iter().map(|r| (r.resource_id.as_str(), r.entry_id.as_str())).collect();
        assert_eq!(kept, [("10", "2-0"), ("9", "3-0")], "byte order of the key; the newest; of a tie the first");
        let mut superseded: Vec<_> = batch.superseded.iter().map(|r| r.entry_id.as_str()).collect();
        superseded.sort_unstable();
        assert_eq!(superseded, ["1-0", "4-0", "5-0"]);
    }

    #[test]
    fn a_batch_concerns_the_events_its_snapshots_answer_written_or_not_and_those_its_outcomes_record() {
        let dead = [("outcome", "dead-lettered"), ("event_id", "e-dead"), ("mall_id", "m1"), ("detail", "{}")];
        let dead =
            StoredEntry { id: "9-0".into(), fields: dead.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect() };
        let batch = Batch::read(vec![snapshot("1-0", "9", 5), snapshot("2-0", "9", 7), dead]);
        let mut concerned: Vec<_> = batch.concerned_events().collect();
        concerned.sort_unstable();
        assert_eq!(concerned, ["e-1-0", "e-2-0", "e-dead"]);
    }
}
