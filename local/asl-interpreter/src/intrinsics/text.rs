//! String and JSON-text intrinsics: `States.Format`, `States.StringToJson`,
//! `States.JsonToString`, `States.StringSplit`, `States.UUID`.

use super::{exactly, string};
use serde_json::Value;

/// Fills each `{}` of the template (the first argument) with the next
/// argument's natural string form; strings go in without quotes, arrays
/// and objects are refused. `literal_placeholders` are the unescaped `{}`
/// of a template written in the definition; a template read from the
/// input has every `{}` as a placeholder.
pub(super) fn format(args: Vec<Value>, literal_placeholders: Option<&[usize]>) -> Result<Value, String> {
    let mut args = args.into_iter();
    let template = match args.next() {
        Some(Value::String(template)) => template,
        Some(other) => return Err(format!("the template must be a string, found {other}")),
        None => return Err("a template is required".to_owned()),
    };
    let placeholders: Vec<usize> = match literal_placeholders {
        Some(offsets) => offsets.to_vec(),
        None => template.match_indices("{}").map(|(at, _)| at).collect(),
    };
    let values: Vec<Value> = args.collect();
    if placeholders.len() != values.len() {
        return Err(format!(
            "the template has {} '{{}}' placeholder(s) but {} value(s) were given",
            placeholders.len(),
            values.len()
        ));
    }
    let mut out = String::with_capacity(template.len());
    let mut from = 0;
    for (at, value) in placeholders.iter().zip(&values) {
        out.push_str(&template[from..*at]);
        match value {
            Value::String(s) => out.push_str(s),
            Value::Array(_) | Value::Object(_) => {
                return Err(format!("a value to format must be a string, number, boolean or null, found {value}"));
            }
            other => out.push_str(&other.to_string()),
        }
        from = at + 2;
    }
    out.push_str(&template[from..]);
    Ok(Value::String(out))
}

pub(super) fn string_to_json(args: Vec<Value>) -> Result<Value, String> {
    let [text] = exactly(args)?;
    let text = string(&text, "the argument")?;
    serde_json::from_str(text).map_err(|e| format!("{text:?} is not JSON text: {e}"))
}

pub(super) fn json_to_string(args: Vec<Value>) -> Result<Value, String> {
    let [value] = exactly(args)?;
    Ok(Value::String(value.to_string()))
}

/// Splits on every character of the delimiter argument and drops empty
/// pieces, as Step Functions does (`"a.b+c"` split by `".+"` is
/// `["a","b","c"]`).
pub(super) fn string_split(args: Vec<Value>) -> Result<Value, String> {
    let [text, delimiters] = exactly(args)?;
    let text = string(&text, "the string to split")?;
    let delimiters = string(&delimiters, "the delimiter")?;
    Ok(Value::Array(
        text.split(|c| delimiters.contains(c))
            .filter(|piece| !piece.is_empty())
            .map(|p| Value::String(p.to_owned()))
            .collect(),
    ))
}

pub(super) fn uuid() -> Value {
    Value::String(uuid::Uuid::new_v4().to_string())
}
