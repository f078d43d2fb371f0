//! Reading a batchUpdate body as Google's JSON reader does: proto3 JSON
//! (ints as numbers or strings, missing fields their defaults), unknown
//! names refused, each request a oneof of kinds, and refusals worded as
//! Google words them (see the parent module).

use super::Edit;
use crate::sheets::grid::{BadRequest, Dimension, SortKey, Span};
use serde_json::{Map, Value};

type Fields = Map<String, Value>;

/// `SortSpec` fields Google has and the sandbox does not serve.
const UNSERVED_SORT_FIELDS: [&str; 5] =
    ["dataSourceColumnReference", "foregroundColor", "backgroundColor", "foregroundColorStyle", "backgroundColorStyle"];

/// Where in the body a value sits: `label` as Google's semantic errors
/// name a request (`requests[0].deleteDimension`), `path` as its JSON
/// errors name a field (`requests[0].delete_dimension.range`).
struct At {
    label: String,
    path: String,
}

impl At {
    fn field(&self, name: &str) -> Self {
        Self { label: self.label.clone(), path: format!("{}.{}", self.path, snake(name)) }
    }

    /// What the request asks cannot be done.
    fn invalid(&self, why: &str) -> BadRequest {
        BadRequest(format!("Invalid {}: {why}", self.label))
    }
}

/// The requests, and `includeSpreadsheetInResponse`.
pub(super) fn read_body(body: &[u8]) -> Result<(Vec<Edit>, bool), BadRequest> {
    let body: Value =
        serde_json::from_slice(body).map_err(|e| BadRequest(format!("Invalid JSON payload received. {e}")))?;
    let top = At { label: String::new(), path: String::new() };
    let fields = object(&body, &top, "BatchUpdateSpreadsheetRequest")?;
    known(fields, &top, &["requests", "includeSpreadsheetInResponse", "responseRanges", "responseIncludeGridData"])?;
    if fields.get("responseIncludeGridData").is_some_and(|v| v == &Value::Bool(true)) {
        return Err(BadRequest("The Sheets sandbox does not include grid data in answers.".into()));
    }
    let include = boolean(fields, &top, "includeSpreadsheetInResponse")?;
    let requests = list(fields, &top, "requests", "Request")?;
    if requests.is_empty() {
        return Err(BadRequest("Must specify at least one request.".into()));
    }
    let edits = requests.iter().enumerate().map(|(i, request)| read_request(i, request));
    Ok((edits.collect::<Result<_, _>>()?, include))
}

fn read_request(i: usize, request: &Value) -> Result<Edit, BadRequest> {
    let at = At { label: format!("requests[{i}]"), path: format!("requests[{i}]") };
    let fields = object(request, &at, "Request")?;
    // A Request is a oneof: exactly one kind set.
    let mut set = fields.iter().filter(|(_, v)| !v.is_null());
    let (kind, body) = match (set.next(), set.next()) {
        (None, _) => return Err(at.invalid("no request is set.")),
        (Some(_), Some((second, _))) => {
            return Err(BadRequest(format!(
                "Invalid value at '{}' (oneof), oneof field 'kind' is already set. Cannot set '{}'",
                at.path,
                snake(second)
            )));
        }
        (Some(one), None) => one,
    };
    let at = At { label: format!("requests[{i}].{kind}"), path: format!("requests[{i}].{}", snake(kind)) };
    match kind.as_str() {
        "deleteDimension" => {
            let fields = object(body, &at, "DeleteDimensionRequest")?;
            known(fields, &at, &["range"])?;
            let (gid, dimension, start, end) = dimension_range(fields, &at)?;
            Ok(Edit::Delete { gid, dimension, start, end })
        }
        "insertDimension" => {
            let fields = object(body, &at, "InsertDimensionRequest")?;
            known(fields, &at, &["range", "inheritFromBefore"])?;
            let (gid, dimension, start, end) = dimension_range(fields, &at)?;
            let inherit_from_before = boolean(fields, &at, "inheritFromBefore")?;
            Ok(Edit::Insert { gid, dimension, start, end, inherit_from_before })
        }
        "sortRange" => read_sort(body, &at),
        other => Err(BadRequest(format!(
            "Invalid requests[{i}]: the Sheets sandbox serves deleteDimension, insertDimension and sortRange \
             requests, not {other}."
        ))),
    }
}

/// A `DimensionRange` (`range` of `fields`): its sheet, dimension and
/// indexes, which Google requires.
fn dimension_range(fields: &Fields, at: &At) -> Result<(u64, Dimension, u32, u32), BadRequest> {
    let (range, at_range) = range(fields, at, "DimensionRange", &["sheetId", "dimension", "startIndex", "endIndex"])?;
    let dimension = match range.get("dimension") {
        None | Some(Value::Null) => return Err(at.invalid("range.dimension must be specified.")),
        Some(Value::String(d)) if d == "DIMENSION_UNSPECIFIED" => {
            return Err(at.invalid("range.dimension must be specified."));
        }
        Some(Value::String(d)) if d == "ROWS" => Dimension::Rows,
        Some(Value::String(d)) if d == "COLUMNS" => Dimension::Columns,
        Some(other) => return Err(wrong_type(&at_range.field("dimension"), "google.apps.sheets.v4.Dimension", other)),
    };
    let index = |name: &str| match integer(range, &at_range, name)? {
        None => Err(at.invalid(&format!("range.{name} must be set"))),
        Some(i) => u32::try_from(i).map_err(|_| at.invalid("DimensionRange indexes must be >= 0")),
    };
    Ok((sheet_id(range, &at_range)?, dimension, index("startIndex")?, index("endIndex")?))
}

fn read_sort(body: &Value, at: &At) -> Result<Edit, BadRequest> {
    let fields = object(body, at, "SortRangeRequest")?;
    known(fields, at, &["range", "sortSpecs"])?;
    let names = ["sheetId", "startRowIndex", "endRowIndex", "startColumnIndex", "endColumnIndex"];
    let (range, at_range) = range(fields, at, "GridRange", &names)?;
    let index = |name: &str| -> Result<Option<u32>, BadRequest> {
        let index = integer(range, &at_range, name)?;
        index.map(|i| u32::try_from(i).map_err(|_| at.invalid("GridRange indexes must be >= 0"))).transpose()
    };
    let rows = Span { start: index("startRowIndex")?, end: index("endRowIndex")? };
    let columns = Span { start: index("startColumnIndex")?, end: index("endColumnIndex")? };
    let keys = list(fields, at, "sortSpecs", "SortSpec")?.iter().enumerate().map(|(i, spec)| {
        let at_spec = At { label: at.label.clone(), path: format!("{}.sort_specs[{i}]", at.path) };
        let spec = object(spec, &at_spec, "SortSpec")?;
        if let Some(name) = spec.keys().find(|k| UNSERVED_SORT_FIELDS.contains(&k.as_str())) {
            return Err(at.invalid(&format!("the Sheets sandbox does not sort by sortSpecs[{i}].{name}.")));
        }
        known(spec, &at_spec, &["dimensionIndex", "sortOrder"])?;
        let column = integer(spec, &at_spec, "dimensionIndex")?.unwrap_or(0);
        let column =
            u32::try_from(column).map_err(|_| at.invalid(&format!("sortSpecs[{i}].dimensionIndex must be >= 0")))?;
        let descending = match spec.get("sortOrder") {
            None | Some(Value::Null) => false,
            Some(Value::String(o)) if o == "ASCENDING" || o == "SORT_ORDER_UNSPECIFIED" => false,
            Some(Value::String(o)) if o == "DESCENDING" => true,
            Some(other) => {
                return Err(wrong_type(&at_spec.field("sortOrder"), "google.apps.sheets.v4.SortOrder", other));
            }
        };
        Ok(SortKey { column, descending })
    });
    let keys = keys.collect::<Result<_, _>>()?;
    Ok(Edit::Sort { gid: sheet_id(range, &at_range)?, rows, columns, keys })
}

/// The `range` of `fields`, a `message` with fields `names`, which Google
/// requires; and where it sits.
fn range<'v>(fields: &'v Fields, at: &At, message: &str, names: &[&str]) -> Result<(&'v Fields, At), BadRequest> {
    let at_range = at.field("range");
    let Some(range) = fields.get("range").filter(|v| !v.is_null()) else {
        return Err(at.invalid("range must be set."));
    };
    let range = object(range, &at_range, message)?;
    known(range, &at_range, names)?;
    Ok((range, at_range))
}

/// A repeated field of `message`s; missing, none.
fn list<'v>(fields: &'v Fields, at: &At, name: &str, message: &str) -> Result<&'v [Value], BadRequest> {
    match fields.get(name) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(items)) => Ok(items),
        Some(other) => Err(wrong_type(&at.field(name), &format!("google.apps.sheets.v4.{message}"), other)),
    }
}

/// `sheetId`; proto3 reads a missing one as 0.
fn sheet_id(fields: &Fields, at: &At) -> Result<u64, BadRequest> {
    let id = integer(fields, at, "sheetId")?.unwrap_or(0);
    u64::try_from(id).map_err(|_| at.invalid(&format!("No grid with id: {id}")))
}

/// An int32 field: a JSON integer or a string of one (proto3 JSON).
fn integer(fields: &Fields, at: &At, name: &str) -> Result<Option<i64>, BadRequest> {
    let Some(value) = fields.get(name).filter(|v| !v.is_null()) else { return Ok(None) };
    let read = match value {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.parse::<i64>().ok(),
        _ => None,
    };
    match read.filter(|i| i32::try_from(*i).is_ok()) {
        Some(i) => Ok(Some(i)),
        None => Err(wrong_type(&at.field(name), "TYPE_INT32", value)),
    }
}

fn boolean(fields: &Fields, at: &At, name: &str) -> Result<bool, BadRequest> {
    match fields.get(name) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(wrong_type(&at.field(name), "TYPE_BOOL", other)),
    }
}

fn object<'v>(value: &'v Value, at: &At, message: &str) -> Result<&'v Fields, BadRequest> {
    value
        .as_object()
        .ok_or_else(|| wrong_type(at, &format!("type.googleapis.com/google.apps.sheets.v4.{message}"), value))
}

/// Google's answer to a field it has no such name for.
fn known(fields: &Fields, at: &At, names: &[&str]) -> Result<(), BadRequest> {
    match fields.keys().find(|k| !names.contains(&k.as_str())) {
        None => Ok(()),
        Some(name) if at.path.is_empty() => {
            Err(BadRequest(format!("Invalid JSON payload received. Unknown name \"{name}\": Cannot find field.")))
        }
        Some(name) => Err(BadRequest(format!(
            "Invalid JSON payload received. Unknown name \"{name}\" at '{}': Cannot find field.",
            at.path
        ))),
    }
}

/// Google's answer to a value of the wrong type for its field.
fn wrong_type(at: &At, type_name: &str, value: &Value) -> BadRequest {
    let type_name = if type_name.starts_with("google.") {
        format!("type.googleapis.com/{type_name}")
    } else {
        type_name.to_owned()
    };
    BadRequest(format!("Invalid value at '{}' ({type_name}), {value}", at.path))
}

/// `startIndex` → `start_index`: how Google's JSON errors name fields.
fn snake(name: &str) -> String {
    let mut snake = String::with_capacity(name.len() + 4);
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            snake.push('_');
        }
        snake.push(c.to_ascii_lowercase());
    }
    snake
}
#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(body: Value) -> Result<Vec<Edit>, String> {
        read_body(body.to_string().as_bytes()).map(|(edits, _)| edits).map_err(|e| e.0)
    }

    #[test]
    fn reads_the_three_requests_as_google_writes_them() {
        let edits = read(json!({"requests": [
            {"deleteDimension": {"range": {"sheetId": 7, "dimension": "ROWS", "startIndex": 1, "endIndex": "3"}}},
            {"insertDimension": {"range": {"dimension": "COLUMNS", "startIndex": 0, "endIndex": 2}, "inheritFromBefore": false}},
            {"sortRange": {"range": {"sheetId": 0, "startRowIndex": 1, "endColumnIndex": 4},
                           "sortSpecs": [{"dimensionIndex": 2, "sortOrder": "DESCENDING"}, {"dimensionIndex": 0}]}}
        ]}))
        .unwrap();
        let keys = vec![SortKey { column: 2, descending: true }, SortKey { column: 0, descending: false }];
        assert_eq!(
            edits,
            [
                Edit::Delete { gid: 7, dimension: Dimension::Rows, start: 1, end: 3 },
                Edit::Insert { gid: 0, dimension: Dimension::Columns, start: 0, end: 2, inherit_from_before: false },
                Edit::Sort {
                    gid: 0,
                    rows: Span { start: Some(1), end: None },
                    columns: Span { start: None, end: Some(4) },
                    keys
                },
            ]
        );
    }

    #[test]
    fn names_what_is_wrong_as_google_does() {
        let delete = |range: Value| json!({"requests": [{"deleteDimension": {"range": range}}]});
        let cases = [
            (json!({"requests": []}), "Must specify at least one request."),
            (json!({"requets": []}), "Invalid JSON payload received. Unknown name \"requets\": Cannot find field."),
            (
                json!({"requests": [{"insertDimension": {"range": {}, "inheritBefore": true}}]}),
                "Invalid JSON payload received. Unknown name \"inheritBefore\" at 'requests[0].insert_dimension': \
                 Cannot find field.",
            ),
            (
                delete(json!({"dimension": "ROWS", "startIndex": "x", "endIndex": 2})),
                "Invalid value at 'requests[0].delete_dimension.range.start_index' (TYPE_INT32), \"x\"",
            ),
            (
                delete(json!({"dimension": "ROW", "startIndex": 0, "endIndex": 2})),
                "Invalid value at 'requests[0].delete_dimension.range.dimension' \
                 (type.googleapis.com/google.apps.sheets.v4.Dimension), \"ROW\"",
            ),
            (
                delete(json!({"dimension": "ROWS", "endIndex": 2})),
                "Invalid requests[0].deleteDimension: range.startIndex must be set",
            ),
            (
                delete(json!({"dimension": "ROWS", "startIndex": -1, "endIndex": 2})),
                "Invalid requests[0].deleteDimension: DimensionRange indexes must be >= 0",
            ),
            (
                json!({"requests": [{"addSheet": {}}]}),
                "Invalid requests[0]: the Sheets sandbox serves deleteDimension, insertDimension and sortRange \
                 requests, not addSheet.",
            ),
            (
                json!({"requests": [{"sortRange": {}, "deleteDimension": {}}]}),
                "Invalid value at 'requests[0]' (oneof), oneof field 'kind' is already set. Cannot set \
                 'sort_range'",
            ),
        ];
        for (body, message) in cases {
            assert_eq!(read(body).unwrap_err(), message);
        }
        let by_colour = json!({"requests": [{"sortRange": {"range": {}, "sortSpecs": [{"backgroundColor": {}}]}}]});
        assert!(read(by_colour).unwrap_err().contains("does not sort by sortSpecs[0].backgroundColor"));
    }
}
