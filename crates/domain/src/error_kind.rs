//! The error kinds a step can fail with, by the names Step Functions matches
//! in `Retry` and `Catch` (`ErrorEquals`). They are defined here once; the
//! Lambda adapters report them as the error type, the local interpreter
//! raises them by name, and a test checks every `ErrorEquals` entry in
//! `statemachine/*.asl.json` against [`ErrorKind::from_name`] and
//! [`PREDEFINED_ERRORS`].

use serde::{Deserialize, Serialize};
use std::fmt;

/// Why a step failed. The state machine decides from the kind alone whether
/// to wait, retry with backoff, or dead-letter the item (to the DLQ).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ErrorKind {
    /// Our own limiter or bucket denied the call; retry after the wait given.
    RateLimited,
    /// The upstream answered 429 or a quota-exhausted header anyway.
    UpstreamThrottled,
    /// The upstream answered 5xx, timed out, or the connection failed.
    UpstreamUnavailable,
    /// A write may or may not have been applied (timeout or 5xx after the
    /// request was sent); verify before sending it again.
    OutcomeUnknown,
    /// The upstream rejected the access token; refresh it and retry once.
    Unauthorized,
    /// The credential is rejected even after a refresh; park until a person
    /// updates it.
    CredentialRejected,
    /// Another worker holds the shop's or sheet's lock.
    LockBusy,
    /// The target does not exist upstream (deleted product, removed sheet).
    NotFound,
    /// The upstream refused the request as malformed; retrying cannot help.
    InvalidRequest,
    /// Redis (ElastiCache) could not be reached or answered an error.
    StoreUnavailable,
    /// A bug or broken invariant inside sluice; never retried blindly.
    Internal,
}

impl ErrorKind {
    pub const ALL: [ErrorKind; 11] = [
        Self::RateLimited,
        Self::UpstreamThrottled,
        Self::UpstreamUnavailable,
        Self::OutcomeUnknown,
        Self::Unauthorized,
        Self::CredentialRejected,
        Self::LockBusy,
        Self::NotFound,
        Self::InvalidRequest,
        Self::StoreUnavailable,
        Self::Internal,
    ];

    /// The name Step Functions sees as the error (`ErrorEquals`).
    pub const fn name(self) -> &'static str {
        match self {
            Self::RateLimited => "Sluice.RateLimited",
            Self::UpstreamThrottled => "Sluice.UpstreamThrottled",
            Self::UpstreamUnavailable => "Sluice.UpstreamUnavailable",
            Self::OutcomeUnknown => "Sluice.OutcomeUnknown",
            Self::Unauthorized => "Sluice.Unauthorized",
            Self::CredentialRejected => "Sluice.CredentialRejected",
            Self::LockBusy => "Sluice.LockBusy",
            Self::NotFound => "Sluice.NotFound",
            Self::InvalidRequest => "Sluice.InvalidRequest",
            Self::StoreUnavailable => "Sluice.StoreUnavailable",
            Self::Internal => "Sluice.Internal",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether the same item can succeed later without a person acting.
    pub const fn is_retryable(self) -> bool {
        match self {
            Self::RateLimited
            | Self::UpstreamThrottled
            | Self::UpstreamUnavailable
            | Self::OutcomeUnknown
            | Self::Unauthorized
            | Self::LockBusy
            | Self::StoreUnavailable => true,
            Self::CredentialRejected | Self::NotFound | Self::InvalidRequest | Self::Internal => false,
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Error names that Step Functions itself defines, and the Lambda service
/// errors AWS recommends retrying on. An `ErrorEquals` entry must be one of
/// these or an [`ErrorKind`] name.
pub const PREDEFINED_ERRORS: &[&str] = &[
    "States.ALL",
    "States.BranchFailed",
    "States.DataLimitExceeded",
    "States.ExceedToleratedFailureThreshold",
    "States.HeartbeatTimeout",
    "States.IntrinsicFailure",
    "States.ItemReaderFailed",
    "States.NoChoiceMatched",
    "States.ParameterPathFailure",
    "States.Permissions",
    "States.QueryEvaluationError",
    "States.ResultPathMatchFailure",
    "States.ResultWriterFailed",
    "States.Runtime",
    "States.TaskFailed",
    "States.Timeout",
    "Lambda.AWSLambdaException",
    "Lambda.ClientExecutionTimeoutException",
    "Lambda.ServiceException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
];

/// Predefined errors that end the execution whatever its Retry and Catch
/// say: "States.ALL … can't catch the States.DataLimitExceeded terminal
/// error type and runtime error types"; "A States.Runtime error is not
/// retriable, and will always cause the execution to fail"
/// (<https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html>).
/// The local interpreter never retries or catches them, and an
/// `ErrorEquals` that names one is dead code, which the definition check
/// refuses. Payloads stay under the 256 KiB limit by carrying keys instead.
pub const TERMINAL_ERRORS: &[&str] = &["States.DataLimitExceeded", "States.Runtime"];

/// Whether `name` may appear in an `ErrorEquals` list of our state machines.
pub fn is_known_error_name(name: &str) -> bool {
    PREDEFINED_ERRORS.contains(&name) || ErrorKind::from_name(name).is_some()
}

/// A step's failure: its kind (what the state machine matches on) and a
/// cause for people (what went wrong, never a secret).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[error("{kind}: {cause}")]
pub struct StepError {
    pub kind: ErrorKind,
    pub cause: String,
}

impl StepError {
    pub fn new(kind: ErrorKind, cause: impl Into<String>) -> Self {
        Self { kind, cause: cause.into() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        let mut names: Vec<_> = ErrorKind::ALL.iter().map(|k| k.name()).collect();
        for kind in ErrorKind::ALL {
            assert_eq!(ErrorKind::from_name(kind.name()), Some(kind));
            assert!(kind.name().starts_with("Sluice."));
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ErrorKind::ALL.len());
    }

    #[test]
    fn unknown_names_are_not_ours() {
        assert_eq!(ErrorKind::from_name("Sluice.Nope"), None);
        assert!(!is_known_error_name("RateLimited"));
        assert!(is_known_error_name("States.ALL"));
        assert!(is_known_error_name("Sluice.LockBusy"));
    }

    #[test]
    fn parking_kinds_are_not_retryable() {
        assert!(!ErrorKind::CredentialRejected.is_retryable());
        assert!(!ErrorKind::InvalidRequest.is_retryable());
        assert!(ErrorKind::UpstreamThrottled.is_retryable());
    }
}
