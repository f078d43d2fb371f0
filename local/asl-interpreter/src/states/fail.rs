//! Fail: ends the execution (or the Map iteration or Parallel branch) with
//! an error and a cause, given as literals or read with a Path or an
//! intrinsic function.
//! See <https://docs.aws.amazon.com/step-functions/latest/dg/state-fail.html>.

use crate::definition::state::StateParse;
use crate::executor::Visit;
use crate::failure::Failure;
use crate::intrinsics::Intrinsic;
use crate::path::Path;
use serde_json::Value;

#[derive(Debug)]
pub(crate) struct FailState {
    error: Option<Source>,
    cause: Option<Source>,
}

#[derive(Debug)]
enum Source {
    Literal(String),
    Path(Path),
    Intrinsic(Intrinsic),
}

impl FailState {
    pub(crate) fn parse(parse: &StateParse<'_>) -> Option<Self> {
        let error = source(parse, "Error", "ErrorPath");
        let cause = source(parse, "Cause", "CausePath");
        Some(Self { error: error?, cause: cause? })
    }

    pub(crate) fn failure(&self, visit: Visit<'_>, input: &Value) -> Failure {
        let resolve = |source: &Source, field: &str| -> Result<String, Failure> {
            let value = match source {
                Source::Literal(text) => return Ok(text.clone()),
                Source::Path(path) => path.select(input, &visit.context()).ok_or_else(|| {
                    Failure::runtime(format!("The {field} '{}' matches nothing in the input", path.text()))
                })?,
                Source::Intrinsic(call) => call.evaluate(input, &visit.context())?,
            };
            match value {
                Value::String(text) => Ok(text),
                other => Err(Failure::runtime(format!("The {field} must select a string, found {other}"))),
            }
        };
        let error = match self.error.as_ref().map(|s| resolve(s, "ErrorPath")).transpose() {
            Ok(error) => error.unwrap_or_default(),
            Err(failure) => return failure,
        };
        match self.cause.as_ref().map(|s| resolve(s, "CausePath")).transpose() {
            Ok(cause) => Failure { error, cause },
            Err(failure) => failure,
        }
    }
}

/// `Error`/`ErrorPath` (or `Cause`/`CausePath`): at most one of the two.
fn source(parse: &StateParse<'_>, literal: &str, path: &str) -> Option<Option<Source>> {
    let fields = &parse.fields;
    if fields.has(literal) && fields.has(path) {
        fields.problem(path, format!("{literal} and {path} cannot both be given"));
        return None;
    }
    if let Some(text) = fields.string(literal) {
        return Some(Some(Source::Literal(text.to_owned())));
    }
    let Some(text) = fields.string(path) else { return Some(None) };
    let parsed = if text.starts_with("States.") {
        Intrinsic::parse(text).map(Source::Intrinsic)
    } else {
        Path::parse(text).map(Source::Path)
    };
    match parsed {
        Ok(source) => Some(Some(source)),
        Err(e) => {
            fields.problem(path, e);
            None
        }
    }
}
