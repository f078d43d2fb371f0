//! A drained batch, read once from its stream entries: the snapshots to
//! upsert (the newest of each resource, in key order), the older ones the
//! batch itself supersedes, the outcome entries, and the entries that are
//! neither. A transaction rolled back and run again writes the same batch
//! without reading the entries again.

use crate::outcome_row::{OutcomeRow, parse_outcome};
use crate::snapshot_row::{SnapshotRow, into_row};
use sluice_redis::StoredEntry;
use std::collections::BTreeMap;

#[derive(Debug, Default)]
pub(crate) struct Batch {
    /// One snapshot per resource, the newest, sorted by key: two drains
    /// writing overlapping batches lock rows in the same order, and
    /// PostgreSQL refuses to update one row twice in a statement.
    pub(crate) rows: Vec<SnapshotRow>,
    /// Snapshots of a resource the batch also holds a newer one of.
    pub(crate) superseded: Vec<SnapshotRow>,
    /// Outcome entries: events parked in the dead-letter queue.
    pub(crate) outcomes: Vec<OutcomeRow>,
    /// Entries that are neither, with why.
    pub(crate) unreadable: Vec<(StoredEntry, String)>,
}

impl Batch {
    pub(crate) fn read(entries: Vec<StoredEntry>) -> Self {
        let mut batch = Batch::default();
        let mut newest: BTreeMap<(String, String, String), SnapshotRow> = BTreeMap::new();
        for entry in entries {
            if entry.is_outcome() {
                match parse_outcome(&entry) {
                    Ok(outcome) => batch.outcomes.push(outcome),
                    Err(reason) => batch.unreadable.push((entry, reason)),
                }
                continue;
            }
            let row = match into_row(entry) {
                Ok(row) => row,
                Err(unreadable) => {
                    batch.unreadable.push(unreadable);
                    continue;
                }
            };
            let key = (row.mall_id.clone(), row.kind.clone(), row.resource_id.clone());
            match newest.get_mut(&key) {
                Some(kept) if kept.version >= row.version => batch.superseded.push(row),
                Some(kept) => batch.superseded.push(std::mem::replace(kept, row)),
                None => {
                    newest.insert(key, row);
                }
            }
        }
        batch.rows = newest.into_values().collect();
        batch
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
