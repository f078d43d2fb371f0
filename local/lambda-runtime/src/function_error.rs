//! An invocation that did not answer: the function's own error report
//! (`POST …/invocation/{id}/error`), or what Lambda reports when the
//! function could not answer (its init failed, its process exited, it ran
//! out of time). The `error_type` is what Step Functions makes the task's
//! `Error`; the last lines the function logged ride along, so a cold start
//! that failed says why without a look at the logs.

use serde::Deserialize;

/// Lambda's error types for failures of the environment, not of the handler.
pub mod kinds {
    /// The process exited (during init or an invocation) without answering.
    pub const EXIT: &str = "Runtime.ExitError";
    /// The invocation ran past the function's timeout; its process was stopped.
    pub const TIMEOUT: &str = "Sandbox.Timedout";
    /// The function answered more than the 6 MB a synchronous invocation may.
    pub const RESPONSE_TOO_LARGE: &str = "Function.ResponseSizeTooLarge";
    /// The local service could not start the environment, or is stopping.
    pub const SERVICE: &str = "Lambda.ServiceException";
    /// The invocation would take the function past its reserved concurrency
    /// (Lambda's 429; Step Functions' name for it).
    pub const TOO_MANY_REQUESTS: &str = "Lambda.TooManyRequestsException";
}

/// See the module docs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{error_type}: {}", self.message_with_log())]
pub struct FunctionError {
    pub error_type: String,
    pub error_message: String,
    /// The function's last log lines when its environment failed (empty
    /// for an error the handler reported itself).
    pub log_tail: Vec<String>,
}

impl FunctionError {
    pub fn new(error_type: impl Into<String>, error_message: impl Into<String>) -> Self {
        Self { error_type: error_type.into(), error_message: error_message.into(), log_tail: Vec::new() }
    }

    pub(crate) fn with_log(mut self, tail: Vec<String>) -> Self {
        self.log_tail = tail;
        self
    }

    /// The report a runtime posts (`{"errorType", "errorMessage"}`); a body
    /// that is not one is kept whole as the message.
    pub(crate) fn from_report(body: &[u8], header_type: Option<&str>) -> Self {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Report {
            error_type: Option<String>,
            error_message: Option<String>,
        }
        match serde_json::from_slice::<Report>(body) {
            Ok(Report { error_type, error_message }) => Self::new(
                error_type.or(header_type.map(str::to_owned)).unwrap_or_else(|| "Unhandled".to_owned()),
                error_message.unwrap_or_default(),
            ),
            Err(_) => Self::new(header_type.unwrap_or("Unhandled"), String::from_utf8_lossy(body)),
        }
    }

    /// The message with the log tail appended: what a caller shows.
    pub fn message_with_log(&self) -> String {
        match self.log_tail.is_empty() {
            true => self.error_message.clone(),
            false => format!("{} (its log: {})", self.error_message, self.log_tail.join(" | ")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_is_read_leniently() {
        let e = FunctionError::from_report(br#"{"errorType":"Sluice.LockBusy","errorMessage":"held"}"#, None);
        assert_eq!((e.error_type.as_str(), e.error_message.as_str()), ("Sluice.LockBusy", "held"));
        let e = FunctionError::from_report(b"not json", Some("Unhandled"));
        assert_eq!((e.error_type.as_str(), e.error_message.as_str()), ("Unhandled", "not json"));
        let e = FunctionError::new(kinds::EXIT, "exit status: 1").with_log(vec!["a".into(), "b".into()]);
        assert_eq!(e.to_string(), "Runtime.ExitError: exit status: 1 (its log: a | b)");
    }
}
