//! Errors of the Redis primitives.

use sluice_domain::{ErrorKind, StepError};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Redis could not be reached, or answered with an error.
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    /// A limit, bucket or key setting that cannot work, named.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// A lock release or extend by a holder whose lease is over.
    #[error("stale lease on {key}: {reason}")]
    StaleLease { key: String, reason: StaleReason },
    /// A script answered something it never returns: a bug, not an outage.
    #[error("unexpected reply from {script}: {reply}")]
    UnexpectedReply { script: &'static str, reply: String },
}

/// Why a lease is stale.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StaleReason {
    /// Nobody holds the lock now: the lease ran out, or it was released.
    Gone,
    /// The lease ran out and another holder has the lock now.
    HeldByAnother,
}

impl std::fmt::Display for StaleReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Gone => "the lock is no longer held (its lease ran out, or it was released)",
            Self::HeldByAnother => "the lease expired and another holder has the lock",
        })
    }
}

impl From<Error> for StepError {
    fn from(err: Error) -> Self {
        let kind = match &err {
            Error::Redis(_) => ErrorKind::StoreUnavailable,
            Error::StaleLease { .. } => ErrorKind::LockBusy,
            Error::Config(_) | Error::UnexpectedReply { .. } => ErrorKind::Internal,
        };
        StepError::new(kind, err.to_string())
    }
}
