//! Cell values in and out: how `valueInputOption` turns a request's JSON
//! into what a cell holds, and how `valueRenderOption` shows it.
//!
//! A cell holds a JSON string, number or boolean (`Null` is an empty
//! cell), or a formula, held as `{"formula": "=…"}` (an object, which no
//! request can write as a value, so a formula and a text that reads like
//! one are never confused). On the way in, for both options: `null` leaves
//! the cell as it is (Google: "null values will be skipped"), `""` empties
//! it, numbers and booleans are kept, lists and objects are refused as
//! Google refuses them. Strings:
//!
//! - `RAW` ("will not be parsed and will be stored as-is"): kept exactly
//!   as given (`"007"`, `"=1+1"` and `"'x"` stay text, the apostrophe
//!   included).
//! - `USER_ENTERED` ("parsed as if the user typed them into the UI"),
//!   simplified from what the Sheets UI does: a leading apostrophe forces
//!   text and is dropped (`"'007"` is the text `007`, `"'=1+1"` the text
//!   `=1+1`); a string starting with `=` is a formula, and so is one
//!   starting with `+` or `-` that is neither a plain number nor the sign
//!   alone (`-A1`, `+1+1`, `- item`); a plain decimal (`-12`,
//!   `+3`, `007`, `3.50`) becomes a number, so leading zeros are lost as
//!   they are in Google; `TRUE`/`FALSE` (any case) become booleans.
//!   Dates, currencies and percentages are not recognised: they stay text.
//!
//! On the way out, `FORMATTED_VALUE` (the default) shows every cell as a
//! string as Google's automatic format would (`7`, `1.5`, `TRUE`);
//! `UNFORMATTED_VALUE` gives the held value. Formulas are not evaluated:
//! both show a formula as the error `#N/A` (what Google shows for one
//! whose result is unavailable), and `FORMULA` shows the formula itself
//! (`=1+1`); other cells show as under `UNFORMATTED_VALUE`.

use serde_json::{Number, Value};

/// `valueInputOption`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InputOption {
    Raw,
    UserEntered,
}

impl InputOption {
    /// The query parameter, which writes require.
    pub(crate) fn parse(text: Option<&str>) -> Result<Self, String> {
        match text {
            Some("RAW") => Ok(Self::Raw),
            Some("USER_ENTERED") => Ok(Self::UserEntered),
            None | Some("") | Some("INPUT_VALUE_OPTION_UNSPECIFIED") => {
                Err("'valueInputOption' is required but not specified".into())
            }
            Some(other) => Err(format!("Invalid value at 'value_input_option' ({other})")),
        }
    }
}

/// `valueRenderOption`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RenderOption {
    Formatted,
    Unformatted,
    Formula,
}

impl RenderOption {
    pub(crate) fn parse(text: Option<&str>) -> Result<Self, String> {
        match text {
            None | Some("FORMATTED_VALUE") => Ok(Self::Formatted),
            Some("UNFORMATTED_VALUE") => Ok(Self::Unformatted),
            Some("FORMULA") => Ok(Self::Formula),
            Some(other) => Err(format!("Invalid value at 'value_render_option' ({other})")),
        }
    }

    /// A held cell as the answer shows it; an empty cell is `""`.
    pub(crate) fn show(self, held: &Value) -> Value {
        if let Some(formula) = formula_of(held) {
            return Value::String(if self == Self::Formula { formula.to_owned() } else { NOT_EVALUATED.to_owned() });
        }
        match (self, held) {
            (_, Value::Null) => Value::String(String::new()),
            (Self::Unformatted | Self::Formula, v) => v.clone(),
            (Self::Formatted, Value::Number(n)) => Value::String(format_number(n)),
            (Self::Formatted, Value::Bool(b)) => Value::String(if *b { "TRUE" } else { "FALSE" }.into()),
            (Self::Formatted, v) => v.clone(),
        }
    }
}

/// What the value renders show for a formula: the sandbox evaluates none.
const NOT_EVALUATED: &str = "#N/A";

/// A held formula, `{"formula": "=…"}`.
pub(crate) fn formula(text: &str) -> Value {
    serde_json::json!({ "formula": text })
}

/// The formula a held cell is, if it is one.
pub fn formula_of(held: &Value) -> Option<&str> {
    held.as_object().filter(|o| o.len() == 1).and_then(|o| o.get("formula")).and_then(Value::as_str)
}

/// What a write does to one cell.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CellWrite {
    /// `null`: leave the cell as it is.
    Skip,
    /// Hold this; `Null` empties the cell.
    Set(Value),
}

/// One request value as a cell write, or Google's complaint about it
/// (`Invalid values[1][0]: struct_value …`), naming its position.
pub(crate) fn cell_write(value: &Value, option: InputOption, row: usize, column: usize) -> Result<CellWrite, String> {
    let held = match value {
        Value::Null => return Ok(CellWrite::Skip),
        Value::Number(_) | Value::Bool(_) => value.clone(),
        Value::String(text) if text.is_empty() => Value::Null,
        Value::String(text) => match option {
            InputOption::Raw => value.clone(),
            InputOption::UserEntered => user_entered(text),
        },
        Value::Array(_) => return Err(format!("Invalid values[{row}][{column}]: list_value {value}")),
        Value::Object(_) => return Err(format!("Invalid values[{row}][{column}]: struct_value {value}")),
    };
    Ok(CellWrite::Set(held))
}

fn user_entered(text: &str) -> Value {
    if let Some(forced_text) = text.strip_prefix('\'') {
        return if forced_text.is_empty() { Value::Null } else { Value::String(forced_text.to_owned()) };
    }
    if text.eq_ignore_ascii_case("true") || text.eq_ignore_ascii_case("false") {
        return Value::Bool(text.eq_ignore_ascii_case("true"));
    }
    if let Some(number) = plain_decimal(text) {
        return Value::Number(number);
    }
    if text.starts_with('=') || (text.starts_with(['+', '-']) && text.len() > 1) {
        return formula(text);
    }
    Value::String(text.to_owned())
}

/// `[+-]?digits(.digits)?` as a number (an integer when it has no fraction
/// and fits); anything else is not a plain decimal.
fn plain_decimal(text: &str) -> Option<Number> {
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
    let (whole, fraction) = match unsigned.split_once('.') {
        Some((w, f)) => (w, Some(f)),
        None => (unsigned, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || fraction.is_some_and(|f| !digits(f)) {
        return None;
    }
    if fraction.is_none()
        && let Ok(n) = text.parse::<i64>()
    {
        return Some(Number::from(n));
    }
    text.parse::<f64>().ok().and_then(Number::from_f64)
}

/// A number as the automatic format shows it: whole numbers without a
/// fraction (`2.0` → `2`), others in their shortest form.
fn format_number(n: &Number) -> String {
    if n.is_i64() || n.is_u64() {
        return n.to_string();
    }
    let f = n.as_f64().unwrap_or(0.0);
    if f.fract() == 0.0 && f.abs() < 1e15 { format!("{}", f as i64) } else { format!("{f}") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn set(value: Value, option: InputOption) -> Value {
        match cell_write(&value, option, 0, 0).unwrap() {
            CellWrite::Set(v) => v,
            CellWrite::Skip => panic!("skipped"),
        }
    }

    #[test]
    fn user_entered_parses_what_raw_keeps() {
        use InputOption::{Raw, UserEntered};
        assert_eq!(set(json!("007"), UserEntered), json!(7));
        assert_eq!(set(json!("007"), Raw), json!("007"));
        assert_eq!(set(json!("-3.50"), UserEntered), json!(-3.5));
        assert_eq!(set(json!("'007"), UserEntered), json!("007"));
        assert_eq!(set(json!("'007"), Raw), json!("'007"));
        assert_eq!(set(json!("true"), UserEntered), json!(true));
        assert_eq!(set(json!("=1+1"), UserEntered), json!({"formula": "=1+1"}));
        assert_eq!(set(json!("=1+1"), Raw), json!("=1+1"));
        assert_eq!(set(json!("'=1+1"), UserEntered), json!("=1+1"));
        assert_eq!(set(json!("'=1+1"), Raw), json!("'=1+1"));
        assert_eq!(set(json!("-A1"), UserEntered), json!({"formula": "-A1"}));
        assert_eq!(set(json!("+1+1"), UserEntered), json!({"formula": "+1+1"}));
        assert_eq!(set(json!("+3"), UserEntered), json!(3));
        assert_eq!(set(json!("-"), UserEntered), json!("-"));
        assert_eq!(set(json!("@A1"), UserEntered), json!("@A1"));
        assert_eq!(set(json!("\t=1"), UserEntered), json!("\t=1"));
        assert_eq!(set(json!("1e3"), UserEntered), json!("1e3"));
        assert_eq!(set(json!("12."), UserEntered), json!("12."));
        assert_eq!(set(json!(""), Raw), Value::Null);
        assert_eq!(set(json!(4.25), Raw), json!(4.25));
        assert_eq!(cell_write(&Value::Null, Raw, 0, 0).unwrap(), CellWrite::Skip);
        let err = cell_write(&json!({"a": 1}), Raw, 1, 2).unwrap_err();
        assert!(err.starts_with("Invalid values[1][2]: struct_value"), "{err}");
    }

    #[test]
    fn formatted_values_are_strings() {
        let f = RenderOption::Formatted;
        assert_eq!(f.show(&json!(7)), json!("7"));
        assert_eq!(f.show(&json!(2.0)), json!("2"));
        assert_eq!(f.show(&json!(1.5)), json!("1.5"));
        assert_eq!(f.show(&json!(false)), json!("FALSE"));
        assert_eq!(f.show(&Value::Null), json!(""));
        assert_eq!(RenderOption::Unformatted.show(&json!(7)), json!(7));
        let held = formula("=1+1");
        assert_eq!(formula_of(&held), Some("=1+1"));
        assert_eq!(formula_of(&json!("=1+1")), None);
        assert_eq!(f.show(&held), json!("#N/A"));
        assert_eq!(RenderOption::Unformatted.show(&held), json!("#N/A"));
        assert_eq!(RenderOption::Formula.show(&held), json!("=1+1"));
        assert_eq!(RenderOption::Formula.show(&json!("=1+1")), json!("=1+1"));
        assert_eq!(RenderOption::Formula.show(&json!(7)), json!(7));
        assert!(InputOption::parse(None).unwrap_err().contains("required"));
        assert!(RenderOption::parse(Some("NOPE")).is_err());
    }
}
