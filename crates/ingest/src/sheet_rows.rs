//! `POST /sheets/rows`: one form-submission row bound for a Google Sheet.
//!
//! The body is `{credential_id, spreadsheet_id, sheet_id, submission_id,
//! row_id, header?, values}`; every field is checked and a bad one is
//! answered 400 naming it. The row's group is its sheet (credential +
//! spreadsheet + sheet), its deduplication id comes from its identity
//! (row id included), and its transaction log, keyed by row id
//! (`sluice trace ROW_ID`), records `INIT`, then `ENQUEUED`, `OVERFLOW`
//! (put in its sheet's overflow by flow control per sheet) or `DUPLICATE`, or `VALIDATION_FAILED`
//! / `FAILED` with the reason. A rejected row leaves
//! nothing but that log (when it has a usable row id); nothing is enqueued.

use crate::rejection::{ErrorCode, Rejection};
use serde_json::{Map, Value};
use sluice_domain::queue::{EXECUTION_INPUT_LIMIT, MAX_MESSAGE_BYTES, PIPE_BATCH_SIZE};
use sluice_domain::{SheetRow, SheetWork};

/// The route.
pub const SHEET_ROWS_PATH: &str = "/sheets/rows";

/// Transaction log stages: a row's trace, from its arrival to the queue.
pub mod stages {
    pub const INIT: &str = "INIT";
    pub const VALIDATION_FAILED: &str = "VALIDATION_FAILED";
    pub const ENQUEUED: &str = "ENQUEUED";
    pub const FAILED: &str = "FAILED";
    /// Put in the sheet's overflow (flow control per sheet).
    pub const OVERFLOW: &str = "OVERFLOW";
    /// Buffered: written here for rows ingest moved from the overflow.
    pub const BUFFERED: &str = "BUFFERED";
    /// Buffered or overflowed already.
    pub const DUPLICATE: &str = "DUPLICATE";
}

const FIELDS: [&str; 7] =
    ["credential_id", "spreadsheet_id", "sheet_id", "submission_id", "row_id", "header", "values"];

/// A row that failed validation, and its row id and credential if that
/// much was usable (so the failure can be logged where the sender will
/// look for it: the credential's log of that row).
#[derive(Debug, Clone, PartialEq)]
pub struct InvalidRow {
    pub rejection: Rejection,
    pub row_id: Option<String>,
    pub credential_id: Option<String>,
}

/// Reads one row.
pub fn parse(body: &[u8], received_at_ms: u64) -> Result<SheetWork, InvalidRow> {
    let value: Value = serde_json::from_slice(body).map_err(|e| InvalidRow {
        rejection: Rejection::new(ErrorCode::InvalidJson, format!("the body is not valid JSON: {e}")),
        row_id: None,
        credential_id: None,
    })?;
    let Value::Object(object) = value else {
        return Err(InvalidRow {
            rejection: Rejection::new(ErrorCode::InvalidJson, "the body must be a JSON object"),
            row_id: None,
            credential_id: None,
        });
    };
    let usable = |field: &str| object.get(field).and_then(Value::as_str).filter(|id| usable_id(id)).map(str::to_owned);
    let (row_id, credential_id) = (usable("row_id"), usable("credential_id"));
    let work = read(&object).map(|row| SheetWork::new(row, received_at_ms));
    let work = work.and_then(fits_a_batch).map_err(|rejection| InvalidRow { rejection, row_id, credential_id })?;
    Ok(work)
}

/// A row whose message would not leave room for a full pipe batch within
/// Step Functions' input limit is refused here: enqueued, it would fail
/// its whole batch, other sheets' rows included, on every delivery.
fn fits_a_batch(work: SheetWork) -> Result<SheetWork, Rejection> {
    let size = work.to_message().escaped_len();
    if size <= MAX_MESSAGE_BYTES {
        return Ok(work);
    }
    Err(Rejection::new(
        ErrorCode::PayloadTooLarge,
        format!(
            "the row takes {size} bytes as a queue message; at most {MAX_MESSAGE_BYTES} fit, because \
             {PIPE_BATCH_SIZE} messages make one Step Functions execution, whose input is limited to \
             {EXECUTION_INPUT_LIMIT} bytes"
        ),
    ))
}

fn read(object: &Map<String, Value>) -> Result<SheetRow, Rejection> {
    if let Some(unknown) = object.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(Rejection::field(
            unknown.clone(),
            format!("is not a field of a row (fields: {})", FIELDS.join(", ")),
        ));
    }
    let text = |field: &str| match object.get(field) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(Rejection::field(field, "must be a string")),
        None => Err(Rejection::field(field, "is missing")),
    };
    let spreadsheet_id = text("spreadsheet_id")?;
    if !spreadsheet_id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
        return Err(Rejection::field("spreadsheet_id", "must be a Google spreadsheet id (letters, digits, - and _)"));
    }
    let sheet_gid = match object.get("sheet_id") {
        Some(n) => n.as_u64().ok_or_else(|| Rejection::field("sheet_id", "must be the sheet's numeric id (gid)"))?,
        None => return Err(Rejection::field("sheet_id", "is missing")),
    };
    let values = match object.get("values") {
        Some(Value::Array(values)) => values.clone(),
        Some(_) => return Err(Rejection::field("values", "must be an array of cells")),
        None => return Err(Rejection::field("values", "is missing")),
    };
    let header = match object.get("header") {
        None | Some(Value::Null) => None,
        Some(Value::Array(titles)) => Some(
            titles
                .iter()
                .map(|t| t.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| Rejection::field("header", "must be an array of strings"))?,
        ),
        Some(_) => return Err(Rejection::field("header", "must be an array of strings")),
    };
    let row = SheetRow {
        credential_id: text("credential_id")?,
        spreadsheet_id,
        sheet_gid,
        submission_id: text("submission_id")?,
        row_id: text("row_id")?,
        values,
        header,
    };
    row.validate().map_err(|e| Rejection::from_field_error(&e, e.field))?;
    Ok(row)
}

/// Whether a row id can key its transaction log (a log must not be keyed
/// by garbage from a request that failed validation).
fn usable_id(id: &str) -> bool {
    !id.trim().is_empty() && id.len() <= sluice_domain::event::MAX_ID_LEN && !id.chars().any(char::is_control)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(mut extra: Value) -> Vec<u8> {
        let mut row = json!({
            "credential_id": "cred-1", "spreadsheet_id": "1AbC_d-9", "sheet_id": 0,
            "submission_id": "sub-1", "row_id": "row-1", "values": ["a", 1, true, null]
        });
        if let (Value::Object(row), Value::Object(extra)) = (&mut row, extra.take()) {
            for (k, v) in extra {
                if v.is_null() {
                    row.remove(&k);
                } else {
                    row.insert(k, v);
                }
            }
        }
        serde_json::to_vec(&row).unwrap()
    }

    fn field_of(result: Result<SheetWork, InvalidRow>) -> (Option<String>, Option<String>) {
        let invalid = result.unwrap_err();
        (invalid.rejection.field, invalid.row_id)
    }

    #[test]
    fn a_good_row_becomes_its_work() {
        let work = parse(&body(json!({"header": ["a", "b", "c", "d"]})), 5).unwrap();
        assert_eq!(work.row.sheet_gid, 0);
        assert_eq!(work.row.header.as_deref().map(<[String]>::len), Some(4));
        assert_eq!(work.event_id, "r:cred-1:1AbC_d-9:0:sub-1:row-1");
        assert_eq!(work.trace_id(), "row:cred-1:row-1");
    }

    #[test]
    fn a_row_too_big_for_a_full_pipe_batch_is_refused_with_the_reason() {
        // Quotes count twice once escaped: a cell of quotes is measured so.
        let fits = "x".repeat(MAX_MESSAGE_BYTES - 600);
        assert!(parse(&body(json!({"values": [fits]})), 5).is_ok());
        let quotes = "\"".repeat(MAX_MESSAGE_BYTES / 2);
        let invalid = parse(&body(json!({"values": [quotes]})), 5).unwrap_err();
        assert_eq!(invalid.rejection.code, ErrorCode::PayloadTooLarge);
        assert!(invalid.rejection.message.contains("262144"), "{}", invalid.rejection.message);
        assert_eq!(invalid.row_id.as_deref(), Some("row-1"), "the refusal is logged where the sender looks");
    }

    #[test]
    fn every_bad_field_is_named() {
        let cases = [
            (json!({"credential_id": null}), "credential_id"),
            (json!({"spreadsheet_id": "has/slash"}), "spreadsheet_id"),
            (json!({"sheet_id": "Sheet1"}), "sheet_id"),
            (json!({"sheet_id": -1}), "sheet_id"),
            (json!({"submission_id": 7}), "submission_id"),
            (json!({"values": "a,b"}), "values"),
            (json!({"values": []}), "values"),
            (json!({"values": [[1]]}), "values"),
            (json!({"header": [1]}), "header"),
            (json!({"header": []}), "header"),
            (json!({"colour": "red"}), "colour"),
        ];
        for (extra, field) in cases {
            let (named, row_id) = field_of(parse(&body(extra.clone()), 0));
            assert_eq!(named.as_deref(), Some(field), "{extra}");
            assert_eq!(row_id.as_deref(), Some("row-1"), "{extra}: the log still has a row id");
        }
        let (named, row_id) = field_of(parse(&body(json!({"row_id": ""})), 0));
        assert_eq!((named.as_deref(), row_id), (Some("row_id"), None));
        assert_eq!(parse(b"[1]", 0).unwrap_err().rejection.code, ErrorCode::InvalidJson);
    }
}
