//! The outcome of fetching one resource, typed so the fetch step can act
//! on it without looking at HTTP again.
//!
//! | answer                               | outcome        | error kind            |
//! |--------------------------------------|----------------|-----------------------|
//! | 200 with the resource                | `Found`        | —                     |
//! | 404                                  | `NotFound`     | `NotFound` (tombstone)|
//! | 401                                  | `Unauthorized` | `Unauthorized`        |
//! | 429                                  | `Throttled`    | `UpstreamThrottled`   |
//! | 5xx, timeout, connection, bad body   | `Unavailable`  | `UpstreamUnavailable` |
//! | 403 (scope missing, app removed)     | `Rejected`     | `CredentialRejected`  |
//! | other 4xx (400, 409, 422, …)         | `Rejected`     | `InvalidRequest`      |
//! | mall id unusable in a URL            | `InvalidTarget`| `InvalidRequest`      |
//!
//! A GET changes nothing upstream, so a timeout is plainly retryable (no
//! `OutcomeUnknown`).

use crate::error_body::Cafe24Error;
use crate::usage::CallUsage;
use serde_json::Value;
use sluice_domain::{ErrorKind, StepError};
use std::fmt;
use std::time::Duration;

/// A resource as fetched.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// The resource object (the value under `product`, `order` or
    /// `customersprivacy`).
    pub resource: Value,
    /// Its `updated_date`, when it has one.
    pub updated_date: Option<String>,
    /// The sandbox's per-resource change counter, when present (see
    /// [`crate::resource::SANDBOX_VERSION_FIELD`]).
    pub version: Option<u64>,
    pub usage: CallUsage,
}

/// Why Cafe24 could not answer usefully; worth retrying.
pub type Unavailable = sluice_domain::upstream::Unavailable<Cafe24Error>;

/// What a fetch produced. Every outcome that came with response headers
/// carries their rate-limit reading.
#[derive(Debug, Clone, PartialEq)]
pub enum FetchOutcome {
    Found(Found),
    /// 404: the resource does not exist (deleted); store a tombstone.
    NotFound {
        error: Option<Cafe24Error>,
        usage: CallUsage,
    },
    /// 401: the access token is missing, invalid or expired.
    Unauthorized {
        error: Option<Cafe24Error>,
        usage: CallUsage,
    },
    /// 429: over the bucket or the usage quota. `retry_after` is what the
    /// `Remain` (or `Retry-After`) headers said, if anything.
    Throttled {
        retry_after: Option<Duration>,
        error: Option<Cafe24Error>,
        usage: CallUsage,
    },
    /// 5xx, timeout, connection failure, broken body.
    Unavailable {
        cause: Unavailable,
        usage: Option<CallUsage>,
    },
    /// Any other 4xx: retrying the same request cannot help.
    Rejected {
        status: u16,
        error: Option<Cafe24Error>,
        usage: CallUsage,
    },
    /// The request could not even be built (bad mall id).
    InvalidTarget {
        reason: String,
    },
}

impl FetchOutcome {
    /// The error kind the state machine matches, `None` for `Found`.
    pub fn error_kind(&self) -> Option<ErrorKind> {
        Some(match self {
            Self::Found(_) => return None,
            Self::NotFound { .. } => ErrorKind::NotFound,
            Self::Unauthorized { .. } => ErrorKind::Unauthorized,
            Self::Throttled { .. } => ErrorKind::UpstreamThrottled,
            Self::Unavailable { .. } => ErrorKind::UpstreamUnavailable,
            Self::Rejected { status: 403, .. } => ErrorKind::CredentialRejected,
            Self::Rejected { .. } | Self::InvalidTarget { .. } => ErrorKind::InvalidRequest,
        })
    }

    /// The step error for this outcome (kind and a cause without secrets),
    /// `None` for `Found`.
    pub fn step_error(&self) -> Option<StepError> {
        self.error_kind().map(|kind| StepError::new(kind, self.to_string()))
    }

    /// The rate-limit headers of the response, when there was one.
    pub fn usage(&self) -> Option<&CallUsage> {
        match self {
            Self::Found(found) => Some(&found.usage),
            Self::NotFound { usage, .. }
            | Self::Unauthorized { usage, .. }
            | Self::Throttled { usage, .. }
            | Self::Rejected { usage, .. } => Some(usage),
            Self::Unavailable { usage, .. } => usage.as_ref(),
            Self::InvalidTarget { .. } => None,
        }
    }
}

impl fmt::Display for FetchOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let error = |e: &Option<Cafe24Error>| match e {
            Some(e) => format!(" ({}: {})", e.code, e.message),
            None => String::new(),
        };
        match self {
            Self::Found(found) => write!(f, "found (updated {})", found.updated_date.as_deref().unwrap_or("unknown")),
            Self::NotFound { error: e, .. } => write!(f, "not found upstream{}", error(e)),
            Self::Unauthorized { error: e, .. } => write!(f, "access token rejected{}", error(e)),
            Self::Throttled { retry_after: Some(d), error: e, .. } => {
                write!(f, "throttled, retry after {:.1}s{}", d.as_secs_f64(), error(e))
            }
            Self::Throttled { retry_after: None, error: e, .. } => write!(f, "throttled{}", error(e)),
            Self::Unavailable { cause, .. } => write!(f, "upstream unavailable: {cause}"),
            Self::Rejected { status, error: e, .. } => write!(f, "rejected with HTTP {status}{}", error(e)),
            Self::InvalidTarget { reason } => write!(f, "cannot fetch: {reason}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_follow_the_table() {
        let usage = CallUsage::default();
        let cases = [
            (FetchOutcome::NotFound { error: None, usage }, Some(ErrorKind::NotFound)),
            (FetchOutcome::Unauthorized { error: None, usage }, Some(ErrorKind::Unauthorized)),
            (FetchOutcome::Throttled { retry_after: None, error: None, usage }, Some(ErrorKind::UpstreamThrottled)),
            (
                FetchOutcome::Unavailable { cause: Unavailable::Timeout, usage: None },
                Some(ErrorKind::UpstreamUnavailable),
            ),
            (FetchOutcome::Rejected { status: 422, error: None, usage }, Some(ErrorKind::InvalidRequest)),
            (FetchOutcome::Rejected { status: 403, error: None, usage }, Some(ErrorKind::CredentialRejected)),
            (FetchOutcome::InvalidTarget { reason: "x".into() }, Some(ErrorKind::InvalidRequest)),
        ];
        for (outcome, kind) in cases {
            assert_eq!(outcome.error_kind(), kind, "{outcome}");
            assert_eq!(outcome.step_error().map(|e| e.kind), kind);
        }
        let found = FetchOutcome::Found(Found { resource: Value::Null, updated_date: None, version: None, usage });
        assert_eq!(found.error_kind(), None);
        assert!(found.step_error().is_none());
    }

    #[test]
    fn causes_name_the_problem() {
        let e = Some(Cafe24Error::new("429", "Too many requests"));
        let throttled = FetchOutcome::Throttled {
            retry_after: Some(Duration::from_secs(32)),
            error: e,
            usage: CallUsage::default(),
        };
        assert_eq!(throttled.to_string(), "throttled, retry after 32.0s (429: Too many requests)");
        let down = FetchOutcome::Unavailable {
            cause: Unavailable::ServerError { status: 503, error: None },
            usage: Some(CallUsage::default()),
        };
        assert_eq!(down.step_error().unwrap().cause, "upstream unavailable: HTTP 503");
        assert!(down.usage().is_some());
    }
}
