//! A snapshot as its stream entry holds it: one field, [`SNAPSHOT_FIELD`],
//! whose value is one JSON object (the resource's body embedded as it is).
//! The fetch step writes it (through the `fetched` hash), the store step
//! appends it, the drain reads it back.
//!
//! One field rather than one per column: the drain reads every entry back
//! (XREADGROUP), and what a reply costs, in redis-server and in the
//! client's RESP parser, grows with its bulk strings more than with its
//! bytes. Nine fields were nineteen bulk strings an entry; one is three.
//! Read back 500 at a time, 100,000 snapshots of 1 KiB cost the reading
//! process 0.92–0.99 s of CPU as nine fields and 0.38–0.42 s as one (this
//! machine; the body's JSON checked in both).
//!
//! Entries appended before this format (the nine fields `mall_id`, `kind`,
//! `id`, `status`, `updated_date`, `version`, `event_ids`,
//! `fetched_at_ms`, `body`) can still be in a stream after an upgrade:
//! [`StoredEntry::snapshot`] reads both.

use crate::snapshot_store::StoredEntry;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::borrow::Cow;

/// The field whose value is a whole snapshot.
pub const SNAPSHOT_FIELD: &str = "snapshot";

/// One snapshot, its texts borrowed from the entry where they need no
/// unescaping, its body and event ids as the JSON text the entry holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SnapshotEntry<'a> {
    #[serde(borrow)]
    pub mall_id: Cow<'a, str>,
    #[serde(borrow)]
    pub kind: Cow<'a, str>,
    /// The resource's id.
    #[serde(borrow)]
    pub id: Cow<'a, str>,
    /// `found` or `deleted` (the upstream answered 404).
    #[serde(borrow)]
    pub status: Cow<'a, str>,
    /// Cafe24's `updated_date`, as sent.
    #[serde(default)]
    pub updated_date: Option<String>,
    /// Cafe24's version of the resource, when it has one.
    #[serde(default)]
    pub version: Option<u64>,
    /// The events this fetch answers: a JSON array of ids.
    #[serde(borrow)]
    pub event_ids: &'a RawValue,
    /// When it was fetched (ms since the epoch): a later fetch is newer.
    pub fetched_at_ms: u64,
    /// The resource as JSON; `null` when deleted.
    #[serde(borrow)]
    pub body: &'a RawValue,
}

impl SnapshotEntry<'_> {
    /// The entry's one field, as the stream holds it.
    pub fn to_field(&self) -> (&'static str, String) {
        // Texts, numbers and JSON already checked: nothing can fail to print.
        let value = serde_json::to_string(self).expect("a snapshot entry always serializes");
        (SNAPSHOT_FIELD, value)
    }
}

/// JSON `null`, the body of a deleted resource whose entry has none.
fn null() -> &'static RawValue {
    serde_json::from_str("null").expect("null is JSON")
}

impl StoredEntry {
    /// The snapshot this entry holds, in either format, or why it holds
    /// none. Only that it is JSON is checked of its body and event ids.
    pub fn snapshot(&self) -> Result<SnapshotEntry<'_>, String> {
        if let Some(value) = self.fields.get(SNAPSHOT_FIELD) {
            return serde_json::from_str(value).map_err(|e| format!("`{SNAPSHOT_FIELD}` is not a snapshot: {e}"));
        }
        let field = |name: &str| self.fields.get(name).map(String::as_str).ok_or_else(|| format!("no `{name}` field"));
        let json = |name: &str| -> Result<&RawValue, String> {
            serde_json::from_str(field(name)?).map_err(|e| format!("`{name}` is not JSON: {e}"))
        };
        let status = field("status")?;
        let fetched_at_ms = field("fetched_at_ms")?;
        Ok(SnapshotEntry {
            mall_id: field("mall_id")?.into(),
            kind: field("kind")?.into(),
            id: field("id")?.into(),
            status: status.into(),
            updated_date: self.fields.get("updated_date").filter(|d| !d.is_empty()).cloned(),
            version: self.fields.get("version").and_then(|v| v.parse().ok()),
            event_ids: json("event_ids")?,
            fetched_at_ms: fetched_at_ms
                .parse()
                .map_err(|_| format!("`fetched_at_ms` is not a number: {fetched_at_ms:?}"))?,
            body: if status == "deleted" { json("body").unwrap_or_else(|_| null()) } else { json("body")? },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(fields: &[(&str, &str)]) -> StoredEntry {
        StoredEntry { id: "1-0".into(), fields: fields.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect() }
    }

    const NINE_FIELDS: &[(&str, &str)] = &[
        ("mall_id", "m1"),
        ("kind", "product"),
        ("id", "7"),
        ("status", "found"),
        ("updated_date", "2026-11-24T10:00:00+09:00"),
        ("version", "3"),
        ("event_ids", r#"["e1","e2"]"#),
        ("fetched_at_ms", "1700000000000"),
        ("body", r#"{"product_no":7,"name":"a \"quoted\" name"}"#),
    ];

    #[test]
    fn one_field_reads_as_the_nine_fields_did() {
        let old = entry(NINE_FIELDS);
        let read = old.snapshot().unwrap();
        let (name, value) = read.to_field();
        let new = entry(&[(name, &value)]);
        let again = new.snapshot().unwrap();
        assert_eq!(value.matches("product_no").count(), 1, "the body embedded once, as JSON: {value}");
        for snapshot in [&read, &again] {
            assert_eq!(
                (&*snapshot.mall_id, &*snapshot.kind, &*snapshot.id, &*snapshot.status),
                ("m1", "product", "7", "found")
            );
            assert_eq!(snapshot.updated_date.as_deref(), Some("2026-11-24T10:00:00+09:00"));
            assert_eq!((snapshot.version, snapshot.fetched_at_ms), (Some(3), 1_700_000_000_000));
            assert_eq!(snapshot.event_ids.get(), r#"["e1","e2"]"#);
            assert_eq!(snapshot.body.get(), NINE_FIELDS[8].1);
        }
        assert!(matches!(again.mall_id, Cow::Borrowed(_)), "texts without escapes are not copied");
    }

    #[test]
    fn an_entry_that_holds_no_snapshot_says_why() {
        let without = |name: &str| entry(&NINE_FIELDS.iter().copied().filter(|(k, _)| *k != name).collect::<Vec<_>>());
        assert_eq!(without("mall_id").snapshot().unwrap_err(), "no `mall_id` field");
        let mut bad_body = NINE_FIELDS.to_vec();
        bad_body[8].1 = "{not json";
        assert!(entry(&bad_body).snapshot().unwrap_err().starts_with("`body` is not JSON"));
        let mut bad_time = NINE_FIELDS.to_vec();
        bad_time[7].1 = "soon";
        assert_eq!(entry(&bad_time).snapshot().unwrap_err(), r#"`fetched_at_ms` is not a number: "soon""#);
        let truncated = entry(&[(SNAPSHOT_FIELD, r#"{"mall_id":"m1","body":{"#)]);
        assert!(truncated.snapshot().unwrap_err().starts_with("`snapshot` is not a snapshot"));
        assert!(entry(&[]).snapshot().is_err());
    }

    #[test]
    fn a_deleted_resource_needs_no_body() {
        let mut deleted: Vec<_> = NINE_FIELDS.iter().copied().filter(|(k, _)| *k != "body").collect();
        deleted[3].1 = "deleted";
        assert_eq!(entry(&deleted).snapshot().unwrap().body.get(), "null");
    }
}
