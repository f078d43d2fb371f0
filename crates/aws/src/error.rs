//! Errors of the SQS adapter, and what every SDK error gives them.

use aws_sdk_sqs::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use sluice_domain::queue::rules::RuleViolation;

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
    pub(crate) fn call<E, R>(operation: &'static str, err: SdkError<E, R>) -> Self
    where
        E: ProvideErrorMetadata + std::error::Error + 'static,
        R: std::fmt::Debug,
    {
        let (code, message) = code_and_message(&err);
        Self::Call { operation, code, message }
    }

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

/// The service's error code, when it answered one, and the most telling
/// message: the service's, else the SDK's chain of causes (a connection
/// refused, a timeout).
pub(crate) fn code_and_message<E, R>(err: &SdkError<E, R>) -> (Option<String>, String)
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    let code = err.code().map(str::to_owned);
    let message = match err.message() {
        Some(m) => m.to_owned(),
        None => DisplayErrorContext(err).to_string(),
    };
    (code, message)
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
    pub(crate) fn call<E, R>(operation: &'static str, err: SdkError<E, R>) -> Self
    where
        E: ProvideErrorMetadata + std::error::Error + 'static,
        R: std::fmt::Debug,
    {
        let (code, message) = code_and_message(&err);
        Self::Call { operation, code, message }
    }

    /// Step Functions' error code, when it answered one.
    pub fn code(&self) -> Option<&str> {
        match self {
            Self::Call { code, .. } => code.as_deref(),
            Self::Malformed { .. } => None,
        }
    }
}
