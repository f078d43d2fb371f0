//! The predefined error names the interpreter raises, and AWS's rules for
//! matching an error against a retrier's or catcher's `ErrorEquals`.
//!
//! From <https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html>:
//! - `States.ALL` "must appear alone in the ErrorEquals array and must appear
//!   in the last retrier in the Retry array" (likewise the last catcher); it
//!   matches any error name, but "can't catch the States.DataLimitExceeded
//!   terminal error type and runtime error types".
//! - "A States.Runtime error is not retriable, and will always cause the
//!   execution to fail. A retry or catch on States.ALL will not catch
//!   States.Runtime errors."
//! - `States.TaskFailed` "acts as a wildcard that matches any known error
//!   name except for States.Timeout".
//! - Retriers (and catchers) are scanned in order; the first whose
//!   `ErrorEquals` contains the error is used.
//!
//! The list of names itself is `sluice_domain::PREDEFINED_ERRORS`, and the
//! terminal ones `sluice_domain::TERMINAL_ERRORS`, each kept once.

use sluice_domain::{PREDEFINED_ERRORS, TERMINAL_ERRORS};

pub const ALL: &str = "States.ALL";
pub const TASK_FAILED: &str = "States.TaskFailed";
pub const TIMEOUT: &str = "States.Timeout";
pub const RUNTIME: &str = "States.Runtime";
pub const DATA_LIMIT_EXCEEDED: &str = "States.DataLimitExceeded";
pub const INTRINSIC_FAILURE: &str = "States.IntrinsicFailure";
pub const NO_CHOICE_MATCHED: &str = "States.NoChoiceMatched";
pub const RESULT_PATH_MATCH_FAILURE: &str = "States.ResultPathMatchFailure";

/// Errors that neither `Retry` nor `Catch` ever handle, whatever they name.
pub(crate) fn is_terminal(error: &str) -> bool {
    TERMINAL_ERRORS.contains(&error)
}

/// Whether one `ErrorEquals` entry matches `error`.
pub(crate) fn matches(pattern: &str, error: &str) -> bool {
    if is_terminal(error) {
        return false;
    }
    match pattern {
        ALL => true,
        TASK_FAILED => error != TIMEOUT,
        _ => pattern == error,
    }
}

/// Whether any entry of an `ErrorEquals` list matches `error`.
pub(crate) fn any_matches(error_equals: &[String], error: &str) -> bool {
    error_equals.iter().any(|pattern| matches(pattern, error))
}

/// Load-time check of one `ErrorEquals` list; `is_last` says whether its
/// retrier or catcher is the last of its array.
pub(crate) fn check_error_equals(names: &[String], is_last: bool) -> Result<(), String> {
    if names.is_empty() {
        return Err("must be a non-empty array of error names".to_owned());
    }
    for name in names {
        // Names under `States.` are reserved: a misspelt one would silently
        // never match, so only the predefined ones are accepted.
        if name.starts_with("States.") && !PREDEFINED_ERRORS.contains(&name.as_str()) {
            return Err(format!(
                "{name:?} is not a predefined error name (names starting with \"States.\" are reserved)"
            ));
        }
    }
    if names.iter().any(|n| n == ALL) {
        if names.len() > 1 {
            return Err("\"States.ALL\" must appear alone in ErrorEquals".to_owned());
        }
        if !is_last {
            return Err("\"States.ALL\" must appear in the last retrier or catcher of its array".to_owned());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_follow_aws_rules() {
        assert!(matches(ALL, "Sluice.RateLimited"));
        assert!(matches(ALL, TIMEOUT));
        assert!(!matches(ALL, RUNTIME));
        assert!(!matches(ALL, DATA_LIMIT_EXCEEDED));
        assert!(!matches(RUNTIME, RUNTIME), "States.Runtime is never retried or caught");
        assert!(!matches(DATA_LIMIT_EXCEEDED, DATA_LIMIT_EXCEEDED), "nor is States.DataLimitExceeded");
        assert!(matches(TASK_FAILED, "Sluice.LockBusy"));
        assert!(!matches(TASK_FAILED, TIMEOUT));
        assert!(matches(TIMEOUT, TIMEOUT));
        assert!(!matches("Sluice.LockBusy", "Sluice.NotFound"));
    }

    #[test]
    fn states_all_must_be_alone_and_last() {
        let all = vec![ALL.to_owned()];
        assert!(check_error_equals(&all, true).is_ok());
        assert!(check_error_equals(&all, false).unwrap_err().contains("last"));
        let mixed = vec![ALL.to_owned(), "Sluice.LockBusy".to_owned()];
        assert!(check_error_equals(&mixed, true).unwrap_err().contains("alone"));
        assert!(check_error_equals(&[], true).is_err());
        let misspelt = vec!["States.Timout".to_owned()];
        assert!(check_error_equals(&misspelt, true).unwrap_err().contains("States.Timout"));
    }
}
