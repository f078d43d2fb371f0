//! Errors of the SQS adapter, and what every SDK error gives them.

use aws_sdk_sqs::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use sluice_domain::queue::rules::RuleViolation;

/// `call(operation, err)`: the error of a call the service refused, or
/// could not be reached for (after the SDK's own retries), with the
/// service's error code when it answered one and the most telling message:
/// the service's, else the SDK's chain of causes (a connection refused, a
/// timeout). The same for each adapter's error.
macro_rules! call_from_sdk {
    () => {
        pub(crate) fn call<E, R>(operation: &'static str, err: SdkError<E, R>) -> Self
        where
            E: ProvideErrorMetadata + std::error::Error + 'static,
            R: std::fmt::Debug,
        {
            let code = err.code().map(str::to_owned);
            let message = err.message().map_or_else(|| DisplayErrorContext(&err).to_string(), str::to_owned);
            Self::Call { operation, code, message }
        }
    };
}

#[derive(Debug, thiserror::Error)]
pub enum SqsError {
    /// SQS refused the call, or could not be reached (after the SDK's own
    /// retries). `code` is SQS's error code when it answered one.
    #[error("SQS {operation} failed{}: {message}", code.as_deref().map(|c| format!(" ({c})")).unwrap_or_default())]
    Call { operation: &'static str, code: Option<String>, message: String },
    /// A request that breaks one of SQS's rules, refused before sending.
    #[error(transparent)]
    Rule(#[from] RuleViolation),
    /// SQS answered something this adapter cannot read (a message without
    /// its group id from a FIFO queue, say): the endpoint is not the SQS it
    /// should be.
    #[error("SQS {operation} answered something unexpected: {detail}")]
    Malformed { operation: &'static str, detail: String },
}

impl SqsError {
    call_from_sdk!();

    pub(crate) fn malformed(operation: &'static str, detail: impl Into<String>) -> Self {
        Self::Malformed { operation, detail: detail.into() }
    }

    /// SQS's error code, when SQS answered one.
    pub fn code(&self) -> Option<&str> {
        match self {
            Self::Call { code, .. } => code.as_deref(),
            Self::Rule(v) => Some(v.code()),
            Self::Malformed { .. } => None,
        }
    }
}

/// Errors of the Step Functions adapter.
#[cfg(feature = "sfn")]
#[derive(Debug, thiserror::Error)]
pub enum SfnError {
    /// Step Functions refused the call, or could not be reached (after the
    /// SDK's own retries). `code` is its error code when it answered one
    /// (`StateMachineDoesNotExist`, `InvalidExecutionInput`, …).
    #[error("Step Functions {operation} failed{}: {message}", code.as_deref().map(|c| format!(" ({c})")).unwrap_or_default())]
    Call { operation: &'static str, code: Option<String>, message: String },
    /// An answer this adapter cannot read (a status it does not know).
    #[error("Step Functions {operation} answered something unexpected: {detail}")]
    Malformed { operation: &'static str, detail: String },
}

#[cfg(feature = "sfn")]
impl SfnError {
    call_from_sdk!();

    /// Step Functions' error code, when it answered one.
    pub fn code(&self) -> Option<&str> {
        match self {
            Self::Call { code, .. } => code.as_deref(),
            Self::Malformed { .. } => None,
        }
    }
}
