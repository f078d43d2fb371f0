//! Payload templates (`Parameters`, `ItemSelector`, `ResultSelector`): JSON
//! copied as written, except that a field whose name ends in `.$` takes
//! its value from a Path or an intrinsic function and loses the `.$`,
//! however deeply nested.
//! See <https://docs.aws.amazon.com/step-functions/latest/dg/input-output-inputpath-params.html>.

use crate::context_object::ContextObject;
use crate::failure::{Failure, abbreviated};
use crate::intrinsics::Intrinsic;
use crate::path::Path;
use serde_json::{Map, Value};

#[derive(Debug, Clone)]
pub(crate) enum PayloadTemplate {
    /// No `.$` field inside: copied as is.
    Static(Value),
    Object(Vec<(String, PayloadTemplate)>),
    Array(Vec<PayloadTemplate>),
    Path {
        field: String,
        path: Path,
    },
    Intrinsic(Intrinsic),
}

impl PayloadTemplate {
    /// Parses a template; on error, the field (as a suffix such as
    /// `.MyDetails.size.$`) and what is wrong with it.
    pub(crate) fn parse(value: &Value) -> Result<Self, (String, String)> {
        if !has_dynamic_field(value) {
            return Ok(Self::Static(value.clone()));
        }
        match value {
            Value::Object(map) => {
                let mut fields = Vec::with_capacity(map.len());
                for (key, child) in map {
                    let (name, template) = match key.strip_suffix(".$") {
                        Some(name) => {
                            let dynamic = parse_dynamic(key, child).map_err(|e| (format!(".{key}"), e))?;
                            (name, dynamic)
                        }
                        None => (key.as_str(), Self::parse(child).map_err(|(f, e)| (format!(".{key}{f}"), e))?),
                    };
                    if fields.iter().any(|(existing, _): &(String, _)| existing == name) {
                        return Err((format!(".{key}"), format!("the field {name:?} is given twice")));
                    }
                    fields.push((name.to_owned(), template));
                }
                Ok(Self::Object(fields))
            }
            Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, item)| Self::parse(item).map_err(|(f, e)| (format!("[{i}]{f}"), e)))
                .collect::<Result<_, _>>()
                .map(Self::Array),
            other => Ok(Self::Static(other.clone())),
        }
    }

    pub(crate) fn evaluate(&self, input: &Value, context: &ContextObject<'_>) -> Result<Value, Failure> {
        match self {
            Self::Static(value) => Ok(value.clone()),
            Self::Object(fields) => {
                let mut out = Map::with_capacity(fields.len());
                for (name, template) in fields {
                    out.insert(name.clone(), template.evaluate(input, context)?);
                }
                Ok(Value::Object(out))
            }
            Self::Array(items) => {
                items.iter().map(|t| t.evaluate(input, context)).collect::<Result<_, _>>().map(Value::Array)
            }
            // The error guide names States.ParameterPathFailure for this, but
            // Step Functions reports a Path that matches nothing as
            // States.Runtime with this message, which no Catch handles.
            Self::Path { field, path } => path.select(input, context).ok_or_else(|| {
                let document = if path.reads_context() { context.value() } else { input };
                Failure::runtime(format!(
                    "The JSONPath '{}' specified for the field '{field}' could not be found in the input '{}'",
                    path.text(),
                    abbreviated(document)
                ))
            }),
            Self::Intrinsic(call) => call.evaluate(input, context),
        }
    }
}

/// `template` evaluated on `input`, or `input` as it is without one.
pub(crate) fn apply(
    template: &Option<PayloadTemplate>,
    input: Value,
    context: &ContextObject<'_>,
) -> Result<Value, Failure> {
    match template {
        Some(template) => template.evaluate(&input, context),
        None => Ok(input),
    }
}

fn parse_dynamic(key: &str, value: &Value) -> Result<PayloadTemplate, String> {
    let Value::String(text) = value else {
        return Err(format!(
            "the value of a field ending in \".$\" must be a Path or an intrinsic function, found {value}"
        ));
    };
    if text.starts_with("States.") {
        Intrinsic::parse(text).map(PayloadTemplate::Intrinsic)
    } else if text.starts_with('$') {
        Path::parse(text).map(|path| PayloadTemplate::Path { field: key.to_owned(), path })
    } else {
        Err(format!("{text:?} is neither a Path (starting with '$') nor an intrinsic function (States.…)"))
    }
}

fn has_dynamic_field(value: &Value) -> bool {
    match value {
        Value::Object(map) => map.iter().any(|(k, v)| k.ends_with(".$") || has_dynamic_field(v)),
        Value::Array(items) => items.iter().any(has_dynamic_field),
        _ => false,
    }
}
