//! A snapshot stream entry read as a `sluice.snapshots` row. The entry is
//! read by `StoredEntry::snapshot` (sluice-redis), in either of the
//! formats the store step has appended; an entry that holds no snapshot,
//! or one PostgreSQL could not store, is unreadable and says why.

use sluice_redis::{SnapshotEntry, StoredEntry};

/// One snapshot, ready to upsert.
#[derive(Debug, Clone, PartialEq)]
pub struct SnapshotRow {
    pub mall_id: String,
    pub kind: String,
    pub resource_id: String,
    /// `found` or `deleted`.
    pub status: String,
    /// The resource as JSON text (checked to be JSON, passed to PostgreSQL
    /// as is: parsing it into a tree only to print it again was a third of
    /// the drain's CPU); `None` for a deleted resource.
    pub body: Option<String>,
    pub updated_date: Option<String>,
    /// The fetch time in ms: a larger version is a later read of Cafe24.
    pub version: i64,
    pub event_ids: Vec<String>,
    /// `event_ids` as the entry holds them (a JSON array): what the row's
    /// `event_ids` column gets, without printing the list again.
    pub event_ids_json: String,
    pub entry_id: String,
}

impl SnapshotRow {
    /// The row's key in `sluice.snapshots`.
    pub fn key(&self) -> (&str, &str, &str) {
        (&self.mall_id, &self.kind, &self.resource_id)
    }
}

/// `entry` as a row, or why it cannot be one.
pub fn parse_entry(entry: &StoredEntry) -> Result<SnapshotRow, String> {
    let snapshot = entry.snapshot()?;
    let (version, event_ids) = check(&snapshot)?;
    let deleted = snapshot.status == "deleted";
    Ok(SnapshotRow {
        mall_id: snapshot.mall_id.into_owned(),
        kind: snapshot.kind.into_owned(),
        resource_id: snapshot.id.into_owned(),
        body: (!deleted).then(|| snapshot.body.get().to_owned()),
        status: snapshot.status.into_owned(),
        updated_date: snapshot.updated_date,
        version,
        event_ids,
        event_ids_json: snapshot.event_ids.get().to_owned(),
        entry_id: entry.id.clone(),
    })
}

/// `entry` as a row; or the entry back, with why it cannot be one.
pub fn into_row(entry: StoredEntry) -> Result<SnapshotRow, (StoredEntry, String)> {
    parse_entry(&entry).map_err(|why| (entry, why))
}

/// Whether `snapshot` can be a row: its version and event ids, or why not.
fn check(snapshot: &SnapshotEntry<'_>) -> Result<(i64, Vec<String>), String> {
    let nonempty = |name: &str, value: &str| if value.is_empty() { Err(format!("`{name}` is empty")) } else { Ok(()) };
    nonempty("status", &snapshot.status)?;
    if snapshot.status != "deleted" && has_nul_escape(snapshot.body.get()) {
        // PostgreSQL refuses the whole statement over it: written with the
        // batch, it would hold up its shard for good.
        return Err("`body` holds \\u0000, which PostgreSQL's jsonb cannot store".into());
    }
    let version = i64::try_from(snapshot.fetched_at_ms)
        .map_err(|_| format!("`fetched_at_ms` is out of range: {}", snapshot.fetched_at_ms))?;
    let event_ids: Vec<String> = serde_json::from_str(snapshot.event_ids.get())
        .map_err(|e| format!("`event_ids` is not a JSON array of strings: {e}"))?;
    let texts = [&*snapshot.mall_id, &*snapshot.kind, &*snapshot.id, &*snapshot.status];
    let nul = |text: &str| text.contains('\0');
    if has_nul_escape(snapshot.event_ids.get()) || texts.into_iter().chain(snapshot.updated_date.as_deref()).any(nul) {
        return Err("a field holds the NUL character, which PostgreSQL cannot store".into());
    }
    nonempty("mall_id", &snapshot.mall_id)?;
    nonempty("kind", &snapshot.kind)?;
    nonempty("id", &snapshot.id)?;
    Ok((version, event_ids))
}

/// Whether JSON text `json` escapes the NUL character (`\u0000`): JSON
/// allows it, jsonb does not. An escaped backslash before `u0000` is text.
fn has_nul_escape(json: &str) -> bool {
    json.match_indices("u0000").any(|(at, _)| {
        let backslashes = json[..at].bytes().rev().take_while(|b| *b == b'\\').count();
        backslashes % 2 == 1
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// An entry as the store step appends it: `snapshot` with `changes`
    /// made to its JSON (a body given as text is embedded as that text).
    fn entry(changes: Value, body: Option<&str>) -> StoredEntry {
        let mut snapshot = json!({
            "mall_id": "m1", "kind": "product", "id": "7", "status": "found",
            "updated_date": "2026-11-24T10:00:00+09:00", "version": 3,
            "event_ids": ["e1", "e2"], "fetched_at_ms": 1_700_000_000_000_u64, "body": "BODY",
        });
        for (name, value) in changes.as_object().into_iter().flatten() {
            snapshot[name] = value.clone();
        }
        let text = snapshot.to_string().replace(r#""BODY""#, body.unwrap_or(r#"{"product_no":7}"#));
        StoredEntry { id: "1-0".into(), fields: [(sluice_redis::SNAPSHOT_FIELD.to_owned(), text)].into() }
    }

    #[test]
    fn a_found_snapshot_becomes_a_row_versioned_by_its_fetch_time() {
        let row = parse_entry(&entry(json!({}), None)).unwrap();
        assert_eq!(row.key(), ("m1", "product", "7"));
        assert_eq!(row.version, 1_700_000_000_000);
        assert_eq!(row.body.as_deref(), Some(r#"{"product_no":7}"#));
        assert_eq!(row.event_ids, ["e1", "e2"]);
        assert_eq!(row.event_ids_json, r#"["e1","e2"]"#, "as the entry holds it");
        assert_eq!(row.updated_date.as_deref(), Some("2026-11-24T10:00:00+09:00"));
    }

    #[test]
    fn a_deleted_snapshot_has_no_body() {
        let deleted = entry(json!({"status": "deleted", "updated_date": null}), Some("null"));
        let row = parse_entry(&deleted).unwrap();
        assert_eq!((row.status.as_str(), row.body, row.updated_date), ("deleted", None, None));
    }

    #[test]
    fn a_body_escaping_nul_is_unreadable_and_an_escaped_backslash_before_u0000_is_not() {
        let with_body = |body: &str| parse_entry(&entry(json!({}), Some(body)));
        let refused = with_body(r#"{"name":"a\u0000b"}"#).unwrap_err();
        assert!(refused.contains("\\u0000"), "{refused}");
        assert!(with_body(r#"{"name":"a\\\u0000b"}"#).is_err(), "an escaped backslash, then the escape");
        assert!(with_body(r#"{"name":"a\\u0000b"}"#).is_ok(), "an escaped backslash, then the text u0000");
        assert!(with_body(r#"{"name":"u0000"}"#).is_ok());
        assert!(parse_entry(&entry(json!({"id": "7\0"}), None)).unwrap_err().contains("NUL"));
        assert!(parse_entry(&entry(json!({"event_ids": ["e\0"]}), None)).unwrap_err().contains("NUL"));
    }

    #[test]
    fn an_entry_that_is_not_a_snapshot_says_what_is_wrong() {
        assert_eq!(parse_entry(&entry(json!({"mall_id": ""}), None)).unwrap_err(), "`mall_id` is empty");
        let ids = parse_entry(&entry(json!({"event_ids": [1]}), None)).unwrap_err();
        assert!(ids.starts_with("`event_ids` is not a JSON array of strings"), "{ids}");
        let body = parse_entry(&entry(json!({}), Some("{not json"))).unwrap_err();
        assert!(body.starts_with("`snapshot` is not a snapshot"), "{body}");
        let nine_fields = StoredEntry { id: "1-0".into(), fields: [("mall_id".to_owned(), "m1".to_owned())].into() };
        assert_eq!(parse_entry(&nine_fields).unwrap_err(), "no `status` field");
    }
}
