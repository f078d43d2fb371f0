//! A snapshot stream entry read as a `sluice.snapshots` row. The field
//! names are the ones the fetch step writes (`Snapshot::fields` in
//! sluice-pipeline); an entry missing one, or whose body or event ids are
//! not JSON, is unreadable and says why.

use serde::de::IgnoredAny;
use sluice_redis::StoredEntry;

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
    into_row(entry.clone()).map_err(|(_, why)| why)
}

/// `entry` as a row, its fields moved into it (a batch's bodies are most
/// of what the drain handles: not copied again); or the entry back, with
/// why it cannot be one.
pub fn into_row(entry: StoredEntry) -> Result<SnapshotRow, (StoredEntry, String)> {
    let (version, event_ids) = match check(&entry) {
        Ok(checked) => checked,
        Err(why) => return Err((entry, why)),
    };
    let StoredEntry { id, mut fields } = entry;
    let mut take = |name: &str| fields.remove(name).unwrap_or_default();
    let status = take("status");
    let body = take("body");
    Ok(SnapshotRow {
        mall_id: take("mall_id"),
        kind: take("kind"),
        resource_id: take("id"),
        body: (status != "deleted").then_some(body),
        status,
        updated_date: Some(take("updated_date")).filter(|d| !d.is_empty()),
        version,
        event_ids,
        event_ids_json: take("event_ids"),
        entry_id: id,
    })
}

/// Whether `entry` can be a row: its version and event ids, or why not.
fn check(entry: &StoredEntry) -> Result<(i64, Vec<String>), String> {
    let field = |name: &str| entry.fields.get(name).ok_or_else(|| format!("no `{name}` field"));
    let nonempty =
        |name: &str| field(name).and_then(|v| if v.is_empty() { Err(format!("`{name}` is empty")) } else { Ok(v) });
    if nonempty("status")? != "deleted" {
        let body = field("body")?;
        serde_json::from_str::<IgnoredAny>(body).map_err(|e| format!("`body` is not JSON: {e}"))?;
        if has_nul_escape(body) {
            // PostgreSQL refuses the whole statement over it: written
            // with the batch, it would hold up its shard for good.
            return Err("`body` holds \\u0000, which PostgreSQL's jsonb cannot store".into());
        }
    }
    let version = field("fetched_at_ms")?
        .parse::<i64>()
        .map_err(|_| format!("`fetched_at_ms` is not a number: {:?}", entry.fields["fetched_at_ms"]))?;
    let event_ids = event_ids(entry)?;
    if has_nul_escape(field("event_ids")?) || entry.fields.values().any(|v| v.contains('\0')) {
        return Err("a field holds the NUL character, which PostgreSQL cannot store".into());
    }
    for name in ["mall_id", "kind", "id"] {
        nonempty(name)?;
    }
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

/// The events `entry` answers, without reading the rest of it (its body
/// is most of an entry, and checking it is most of reading one).
pub fn event_ids(entry: &StoredEntry) -> Result<Vec<String>, String> {
    let ids = entry.fields.get("event_ids").ok_or("no `event_ids` field")?;
    serde_json::from_str(ids).map_err(|e| format!("`event_ids` is not a JSON array of strings: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(fields: &[(&str, &str)]) -> StoredEntry {
        StoredEntry {
            id: "1-0".into(),
            fields: fields.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
        }
    }

    const FOUND: &[(&str, &str)] = &[
        ("mall_id", "m1"),
        ("kind", "product"),
        ("id", "7"),
        ("status", "found"),
        ("updated_date", "2026-11-24T10:00:00+09:00"),
        ("version", "3"),
        ("event_ids", r#"["e1","e2"]"#),
        ("fetched_at_ms", "1700000000000"),
        ("body", r#"{"product_no":7}"#),
    ];

    #[test]
    fn a_found_snapshot_becomes_a_row_versioned_by_its_fetch_time() {
        let row = parse_entry(&entry(FOUND)).unwrap();
        assert_eq!(row.key(), ("m1", "product", "7"));
        assert_eq!(row.version, 1_700_000_000_000);
        assert_eq!(row.body.as_deref(), Some(r#"{"product_no":7}"#));
        assert_eq!(row.event_ids, ["e1", "e2"]);
        assert_eq!(row.updated_date.as_deref(), Some("2026-11-24T10:00:00+09:00"));
    }

    #[test]
    fn a_deleted_snapshot_has_no_body() {
        let mut fields = FOUND.to_vec();
        fields.retain(|(k, _)| *k != "status" && *k != "body" && *k != "updated_date");
        fields.extend([("status", "deleted"), ("body", "null"), ("updated_date", "")]);
        let row = parse_entry(&entry(&fields)).unwrap();
        assert_eq!((row.status.as_str(), row.body, row.updated_date), ("deleted", None, None));
    }

    #[test]
    fn a_body_escaping_nul_is_unreadable_and_an_escaped_backslash_before_u0000_is_not() {
        let with_body = |body: &str| {
            let mut fields = FOUND.to_vec();
            fields.retain(|(k, _)| *k != "body");
            fields.push(("body", body));
            parse_entry(&entry(&fields))
        };
        let refused = with_body(r#"{"name":"a\u0000b"}"#).unwrap_err();
        assert!(refused.contains("\\u0000"), "{refused}");
        assert!(with_body(r#"{"name":"a\\\u0000b"}"#).is_err(), "an escaped backslash, then the escape");
        assert!(with_body(r#"{"name":"a\\u0000b"}"#).is_ok(), "an escaped backslash, then the text u0000");
        assert!(with_body(r#"{"name":"u0000"}"#).is_ok());
        let mut nul_id = FOUND.to_vec();
        nul_id.retain(|(k, _)| *k != "id");
        nul_id.push(("id", "7\0"));
        assert!(parse_entry(&entry(&nul_id)).unwrap_err().contains("NUL"));
    }

    #[test]
    fn an_entry_that_is_not_a_snapshot_says_what_is_wrong() {
        let without_mall: Vec<_> = FOUND.iter().copied().filter(|(k, _)| *k != "mall_id").collect();
        assert_eq!(parse_entry(&entry(&without_mall)).unwrap_err(), "no `mall_id` field");
        let mut bad_body = FOUND.to_vec();
        bad_body.retain(|(k, _)| *k != "body");
        bad_body.push(("body", "{not json"));
        assert!(parse_entry(&entry(&bad_body)).unwrap_err().starts_with("`body` is not JSON"));
        assert!(parse_entry(&entry(&[])).is_err());
    }
}
