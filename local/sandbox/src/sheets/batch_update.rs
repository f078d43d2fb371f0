//! `POST /v4/spreadsheets/{id}:batchUpdate`, for what people do to a sheet
//! that an appender must live with: `deleteDimension` (rows or columns
//! removed, what follows moves back), `insertDimension` (blank rows or
//! columns), `sortRange` (rows reordered by columns). The grid side is
//! `grid::edits`; this is the wire side.
//!
//! ```text
//! {"requests": [{"deleteDimension": {"range": {"sheetId": 0, "dimension": "ROWS", "startIndex": 1, "endIndex": 3}}},
//!               {"insertDimension": {"range": {…}, "inheritFromBefore": false}},
//!               {"sortRange": {"range": {"sheetId": 0, "startRowIndex": 1, "endRowIndex": 9,
//!                                        "startColumnIndex": 0, "endColumnIndex": 4},
//!                              "sortSpecs": [{"dimensionIndex": 2, "sortOrder": "DESCENDING"}]}}],
//!  "includeSpreadsheetInResponse": false}
//! → {"spreadsheetId": "…", "replies": [{}, {}, {}]}
//! ```
//!
//! As at Google: the requests apply in order, each seeing the sheet as the
//! ones before left it, and all or none (one refused request refuses the
//! batch, nothing applied); indexes are 0-based, end-exclusive, and may be
//! JSON numbers or strings of digits (proto3 JSON); a missing `sheetId` is
//! sheet 0 and a missing `GridRange` index is unbounded on that side; an
//! unset `sortOrder` sorts ascending (the sandbox's reading). A refusal is
//! a 400 `INVALID_ARGUMENT` in Google's words: `Invalid JSON payload
//! received. Unknown name "…" at '…': Cannot find field.` for a field
//! Google does not know, `Invalid value at '…' (TYPE_INT32), "x"` for a
//! value of the wrong type, `Invalid requests[i].kind: …` for what a
//! request asks that cannot be done (`No grid with id: 9`, `Cannot delete
//! a row that doesn't exist…`). Requests and fields Google has but the
//! sandbox does not serve (`addSheet`, sorting by colour, grid data in the
//! answer) are refused, naming them, rather than ignored.
//!
//! It is a write request (quota, faults and record as for `values.append`;
//! the record's `rows` counts rows deleted, inserted or sorted).

mod read;

use crate::sheets::api::{Done, not_found, serve, spreadsheet_json};
use crate::sheets::grid::{BadRequest, Dimension, SortKey, Span, Spreadsheet};
use crate::sheets::record::SheetsOp;
use crate::sheets::state::Shared;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::{Value, json};
use std::sync::Arc;

/// One request of the batch, read and checked for what can be checked
/// before the sheet is looked at.
#[derive(Debug, Clone, PartialEq)]
enum Edit {
    Delete { gid: u64, dimension: Dimension, start: u32, end: u32 },
    Insert { gid: u64, dimension: Dimension, start: u32, end: u32, inherit_from_before: bool },
    Sort { gid: u64, rows: Span, columns: Span, keys: Vec<SortKey> },
}

pub(crate) async fn batch_update(
    State(shared): State<Arc<Shared>>,
    Path(segment): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    // `{id}:batchUpdate` is one segment, as `{range}:append` is.
    let Some(id) = segment.strip_suffix(":batchUpdate").map(str::to_owned) else { return not_found().await };
    let answer_id = id.clone();
    let operation = Box::new(move |spreadsheet: &mut Spreadsheet| Done::of(run(&answer_id, &body, spreadsheet)));
    serve(&shared, SheetsOp::BatchUpdate, &headers, id, None, operation).deliver().await
}

/// Applies the batch all or nothing; the answer and the rows it touched.
fn run(id: &str, body: &[u8], spreadsheet: &mut Spreadsheet) -> Result<(Value, usize), BadRequest> {
    let (edits, include_spreadsheet) = read::read_body(body)?;
    // Edit a copy and keep it only if every request applied: a refused
    // request leaves the sheet as it was, as at Google.
    let mut edited = spreadsheet.clone();
    let mut rows = 0;
    for (i, edit) in edits.iter().enumerate() {
        rows += apply(&mut edited, edit)
            .map_err(|why| BadRequest(format!("Invalid requests[{i}].{}: {why}", edit.kind())))?;
    }
    *spreadsheet = edited;
    let mut answer = json!({"spreadsheetId": id, "replies": vec![json!({}); edits.len()]});
    if include_spreadsheet {
        answer["updatedSpreadsheet"] = spreadsheet_json(id, spreadsheet, false);
    }
    Ok((answer, rows))
}

impl Edit {
    fn kind(&self) -> &'static str {
        match self {
            Self::Delete { .. } => "deleteDimension",
            Self::Insert { .. } => "insertDimension",
            Self::Sort { .. } => "sortRange",
        }
    }
}

/// One edit on the spreadsheet; the rows it deleted, inserted or sorted.
fn apply(spreadsheet: &mut Spreadsheet, edit: &Edit) -> Result<usize, String> {
    let cells = spreadsheet.grid_cells();
    let (Edit::Delete { gid, .. } | Edit::Insert { gid, .. } | Edit::Sort { gid, .. }) = edit;
    let sheet = spreadsheet.sheet_mut(*gid).ok_or_else(|| format!("No grid with id: {gid}"))?;
    let rows = |dimension: Dimension, count: u32| if dimension == Dimension::Rows { count as usize } else { 0 };
    match edit {
        Edit::Delete { dimension, start, end, .. } => {
            sheet.delete_dimension(*dimension, *start, *end).map(|()| rows(*dimension, end - start))
        }
        Edit::Insert { dimension, start, end, inherit_from_before, .. } => sheet
            .insert_dimension(*dimension, *start, *end, *inherit_from_before, cells)
            .map(|()| rows(*dimension, end - start)),
        Edit::Sort { rows, columns, keys, .. } => sheet.sort_range(*rows, *columns, keys),
    }
}
