//! An outcome stream entry read as a `sluice.events` row: an event the
//! pipeline gave up on (`dead-lettered`: given up to the dead-letter
//! queue), appended by the failure step (`sluice_pipeline::failure_step`)
//! with the fields `outcome`, `event_id`, `mall_id` and `detail` (JSON).
//! Such an entry names no resource, so it becomes an event row only, never
//! a snapshot.
//!
//! Entries appended before the outcome was renamed say `parked`. Their
//! value is recorded as it is, not rewritten: the outcome is part of the
//! row's key, so an entry drained again after the deploy (a redelivery)
//! must meet the row an earlier drain wrote. Readers accept both.

use serde_json::Value;
use sluice_redis::{OUTCOME_FIELD, StoredEntry};

/// One event's outcome, ready to record.
#[derive(Debug, Clone, PartialEq)]
pub struct OutcomeRow {
    pub event_id: String,
    /// `dead-lettered` (`parked` in entries appended before the rename).
    pub outcome: String,
    pub mall_id: String,
    pub detail: Value,
    /// When it was appended: the entry id's time (Redis's clock, ms).
    pub at_ms: i64,
    pub entry_id: String,
}

/// `entry` as an outcome, or why it cannot be one.
pub fn parse_outcome(entry: &StoredEntry) -> Result<OutcomeRow, String> {
    let nonempty = |name: &str| match entry.fields.get(name) {
        None => Err(format!("no `{name}` field")),
        Some(v) if v.is_empty() => Err(format!("`{name}` is empty")),
        Some(v) => Ok(v.clone()),
    };
    let detail = match entry.fields.get("detail") {
        Some(text) => serde_json::from_str(text).map_err(|e| format!("`detail` is not JSON: {e}"))?,
        None => Value::Object(serde_json::Map::new()),
    };
    let at_ms = entry
        .id
        .split_once('-')
        .and_then(|(ms, _)| ms.parse().ok())
        .ok_or_else(|| format!("entry id {:?} is not a stream id", entry.id))?;
    Ok(OutcomeRow {
        event_id: nonempty("event_id")?,
        outcome: nonempty(OUTCOME_FIELD)?,
        mall_id: nonempty("mall_id")?,
        detail,
        at_ms,
        entry_id: entry.id.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str, fields: &[(&str, &str)]) -> StoredEntry {
        StoredEntry { id: id.into(), fields: fields.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect() }
    }

    const DEAD_LETTERED: &[(&str, &str)] =
        &[("outcome", "dead-lettered"), ("event_id", "e1"), ("mall_id", "m1"), ("detail", r#"{"error":"Sluice.X"}"#)];

    #[test]
    fn a_dead_lettered_entry_becomes_an_outcome_at_the_entry_ids_time() {
        let row = parse_outcome(&entry("1700000000123-4", DEAD_LETTERED)).unwrap();
        assert_eq!((row.event_id.as_str(), row.outcome.as_str(), row.mall_id.as_str()), ("e1", "dead-lettered", "m1"));
        assert_eq!((row.at_ms, row.detail["error"].as_str()), (1_700_000_000_123, Some("Sluice.X")));
    }

    /// An entry appended before the rename: still an outcome, its value
    /// kept, so drained again it meets the row an earlier drain wrote.
    #[test]
    fn an_entry_appended_as_parked_before_the_rename_is_still_an_outcome_its_value_kept() {
        let mut old = DEAD_LETTERED.to_vec();
        old[0] = ("outcome", "parked");
        let row = parse_outcome(&entry("1700000000123-4", &old)).unwrap();
        assert_eq!((row.event_id.as_str(), row.outcome.as_str(), row.at_ms), ("e1", "parked", 1_700_000_000_123));
    }

    #[test]
    fn an_outcome_entry_that_cannot_be_read_says_why() {
        let no_event: Vec<_> = DEAD_LETTERED.iter().copied().filter(|(k, _)| *k != "event_id").collect();
        assert_eq!(parse_outcome(&entry("1-0", &no_event)).unwrap_err(), "no `event_id` field");
        let mut bad = DEAD_LETTERED.to_vec();
        bad.retain(|(k, _)| *k != "detail");
        bad.push(("detail", "{"));
        assert!(parse_outcome(&entry("1-0", &bad)).unwrap_err().starts_with("`detail` is not JSON"));
        assert!(parse_outcome(&entry("nope", DEAD_LETTERED)).unwrap_err().contains("not a stream id"));
    }
}
