//! `Catch`: catchers, scanned in order after retries are exhausted; the
//! first whose `ErrorEquals` matches sends the error output
//! (`{"Error", "Cause"}`), placed into the state's raw input by the
//! catcher's `ResultPath` (default `$`), to its `Next` state.
//! See <https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html#error-handling-fallback-states>.

use crate::definition::reader::Fields;
use crate::error_name;
use crate::failure::Failure;
use crate::reference_path::ResultPath;
use crate::retry::parse_error_equals;
use serde_json::Value;

#[derive(Debug, Clone)]
pub(crate) struct Catcher {
    error_equals: Vec<String>,
    pub(crate) next: usize,
    result_path: ResultPath,
}

const CATCHER_FIELDS: &[&str] = &["ErrorEquals", "Next", "ResultPath", "Comment"];

impl Catcher {
    pub(crate) fn parse(fields: &Fields<'_>, is_last: bool, next: Option<usize>) -> Option<Self> {
        fields.check_known(CATCHER_FIELDS, "a catcher");
        let error_equals = parse_error_equals(fields, is_last);
        let result_path = fields.result_path("ResultPath");
        Some(Self { error_equals: error_equals?, next: next?, result_path })
    }

    /// The first catcher for `failure`, if any.
    pub(crate) fn find<'c>(catchers: &'c [Catcher], failure: &Failure) -> Option<&'c Catcher> {
        catchers.iter().find(|c| error_name::any_matches(&c.error_equals, &failure.error))
    }

    /// The input of the `Next` state.
    pub(crate) fn output(&self, raw_input: Value, failure: &Failure) -> Result<Value, Failure> {
        self.result_path.apply(raw_input, failure.error_output())
    }
}
