//! Step Functions' payload quota: "Maximum input or output size for a task,
//! state, or execution: 256 KiB of data as a UTF-8 encoded string"
//! (<https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html>;
//! the API reference gives every input and output field a maximum length of
//! 262,144 bytes in UTF-8). Past it, per
//! <https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html>,
//! `States.DataLimitExceeded` is raised when
//! - the output of a connector (a task's resource) is larger than the quota,
//! - the output of a state is larger than the quota,
//! - after Parameters processing, the input of a state is larger than it;
//!
//! and it is "a terminal error that can't be caught by the States.ALL error
//! type". The interpreter checks exactly those points, plus the execution's
//! own input, and a Map's or Parallel's aggregated results (the "connector
//! output" of those states: the array of every iteration's or branch's
//! output, which is why many small results can still exceed the quota).
//! [`error_name::is_terminal`](crate::error_name) keeps Retry and Catch off
//! it, `States.ALL` or not: the conservative reading of "terminal", so a
//! definition that relies on catching it cannot pass here. (Executions
//! recorded against AWS in 2024 for LocalStack's validated tests show a
//! `lambda:invoke` task whose result was too large caught by a catcher on
//! `States.DataLimitExceeded` and by one on `States.ALL`; a Pass state's
//! oversized output failed the execution outright. Where the service is
//! more lenient than its documentation, a definition that passes here
//! still works there; the reverse would not hold.)
//!
//! Sizes are the bytes of the compact JSON text, counted without building
//! the string, and the count stops as soon as it passes the quota.

use crate::error_name::DATA_LIMIT_EXCEEDED;
use crate::failure::Failure;
use serde_json::Value;
use std::io;

/// 256 KiB: the largest input or output of a task, state or execution.
pub const MAX_PAYLOAD_BYTES: usize = 262_144;

/// The UTF-8 size of `value` as compact JSON, or `None` once it is past
/// `limit` (the rest is not serialised).
pub fn json_size_within(value: &Value, limit: usize) -> Option<usize> {
    let mut counter = Counter { bytes: 0, limit };
    match serde_json::to_writer(&mut counter, value) {
        Ok(()) => Some(counter.bytes),
        Err(_) => None,
    }
}

/// Fails with `States.DataLimitExceeded` when `value` is over the quota.
/// `cause` names what was too large, the way Step Functions words it.
pub(crate) fn check(value: &Value, cause: impl FnOnce() -> String) -> Result<(), Failure> {
    match json_size_within(value, MAX_PAYLOAD_BYTES) {
        Some(_) => Ok(()),
        None => Err(Failure::new(DATA_LIMIT_EXCEEDED, cause())),
    }
}

/// A state's or task's result over the quota: Step Functions' own cause.
pub(crate) fn result_cause(name: &str) -> String {
    format!(
        "The state/task '{name}' returned a result with a size exceeding the maximum number of bytes service limit."
    )
}

/// A state's input (after Parameters or ItemSelector) over the quota.
pub(crate) fn input_cause(name: &str) -> String {
    format!("The state/task '{name}' has an input with a size exceeding the maximum number of bytes service limit.")
}

/// Counts bytes, failing the write once past the limit so serialisation
/// of a huge value stops early.
struct Counter {
    bytes: usize,
    limit: usize,
}

impl io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.bytes += buf.len();
        if self.bytes > self.limit {
            return Err(io::Error::other("over the payload quota"));
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sizes_are_utf8_bytes_of_compact_json() {
        assert_eq!(json_size_within(&json!({"a": [1, 2]}), 100), Some(11));
        // "é" is two bytes in UTF-8, one char.
        assert_eq!(json_size_within(&json!("é"), 100), Some(4));
        assert_eq!(json_size_within(&json!("x".repeat(10)), 12), Some(12));
        assert_eq!(json_size_within(&json!("x".repeat(11)), 12), None);
    }

    #[test]
    fn the_quota_is_inclusive() {
        // A string of n bytes is n + 2 with its quotes.
        let exactly = json!("x".repeat(MAX_PAYLOAD_BYTES - 2));
        assert!(check(&exactly, String::new).is_ok());
        let over = json!("x".repeat(MAX_PAYLOAD_BYTES - 1));
        let failure = check(&over, || "too big".into()).unwrap_err();
        assert_eq!((failure.error.as_str(), failure.cause.as_deref()), (DATA_LIMIT_EXCEEDED, Some("too big")));
    }
}
