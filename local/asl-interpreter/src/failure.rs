//! A runtime error of an execution: the error name that `Retry` and `Catch`
//! match on, and a cause for people.

use crate::error_name;
use serde_json::{Value, json};
use std::fmt;

/// An error raised while a state runs: by a task handler, by the
/// interpreter (`States.*`), or by a `Fail` state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The error name (`ErrorEquals` matches it), e.g. `Sluice.RateLimited`
    /// or `States.Runtime`.
    pub error: String,
    /// A human-readable explanation; `None` when the raiser gave none (a
    /// `Fail` state without `Cause`, a task timeout).
    pub cause: Option<String>,
}

impl Failure {
    pub fn new(error: impl Into<String>, cause: impl Into<String>) -> Self {
        Self { error: error.into(), cause: Some(cause.into()) }
    }

    pub(crate) fn without_cause(error: impl Into<String>) -> Self {
        Self { error: error.into(), cause: None }
    }

    /// `States.Runtime`: the definition met data it cannot process (a Path
    /// that matches nothing, an Items value that is no array). Never
    /// retried, never caught.
    pub(crate) fn runtime(cause: impl Into<String>) -> Self {
        Self::new(error_name::RUNTIME, cause)
    }

    pub(crate) fn intrinsic(cause: impl Into<String>) -> Self {
        Self::new(error_name::INTRINSIC_FAILURE, cause)
    }

    /// The "error output" a catcher passes on: `{"Error": …, "Cause": …}`.
    pub(crate) fn error_output(&self) -> Value {
        let mut output = json!({ "Error": self.error });
        if let Some(cause) = &self.cause {
            output["Cause"] = json!(cause);
        }
        output
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.cause {
            Some(cause) => write!(f, "{}: {cause}", self.error),
            None => f.write_str(&self.error),
        }
    }
}

impl std::error::Error for Failure {}

/// A JSON value shortened for an error message, so one huge input does not
/// make a cause unreadable.
pub(crate) fn abbreviated(value: &Value) -> String {
    const LIMIT: usize = 200;
    let text = value.to_string();
    if text.len() <= LIMIT {
        return text;
    }
    let mut end = LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}
