//! The outcome of one Sheets API call, typed so the flush step can act on
//! it without looking at HTTP again, and its error kind, decided here once.
//!
//! | answer                                         | outcome          | error kind            |
//! |------------------------------------------------|------------------|-----------------------|
//! | 2xx with the expected body                     | `Ok`             | —                     |
//! | 429 (a quota; nothing applied)                 | `Throttled`      | `UpstreamThrottled`   |
//! | 401 (token missing, invalid, expired)          | `Unauthorized`   | `Unauthorized`        |
//! | 403 (no access to the spreadsheet)             | `Forbidden`      | `CredentialRejected`  |
//! | 404, or no sheet with the gid                  | `NotFound`       | `NotFound`            |
//! | 400 "Unable to parse range" (title unknown)    | `BadRequest`     | `UpstreamUnavailable` |
//! | other 4xx (beyond the grid, bad value)         | `BadRequest`     | `InvalidRequest`      |
//! | read: 5xx, timeout, connection, bad body       | `Unavailable`    | `UpstreamUnavailable` |
//! | write: connection never made                   | `Unavailable`    | `UpstreamUnavailable` |
//! | 408 (the request was never read in full)       | `Unavailable`    | `UpstreamUnavailable` |
//! | write: 5xx, timeout, broken or unreadable body | `OutcomeUnknown` | `OutcomeUnknown`      |
//! | spreadsheet id or range unusable               | `InvalidTarget`  | `InvalidRequest`      |
//!
//! A sheet is addressed by title but known by gid; the client caches the
//! title. When Google no longer knows the title (the sheet was renamed or
//! deleted), the client forgets the spreadsheet's titles and the outcome is
//! retryable: the retry resolves the gid again and succeeds after a rename,
//! or ends in `NotFound` after a delete. Only sheet titles can make a range
//! unparseable here, because the client checks the cells part itself.
//!
//! `append` is not idempotent: once its request may have reached Google,
//! a 5xx or a timeout does not say whether the rows were written, so the
//! outcome is `OutcomeUnknown` (verify with `values.get` before sending
//! again). A 429, 401, 403, 404 and 400 are answered before anything is
//! written, so retrying those cannot duplicate rows.

use crate::error_body::{GoogleError, QuotaViolation};
use sluice_domain::{ErrorKind, StepError};
use std::fmt;
use std::time::Duration;

/// Why Google could not answer usefully.
pub type Unavailable = sluice_domain::upstream::Unavailable<GoogleError>;

/// What a `NotFound` is missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    /// 404: the spreadsheet id names nothing (deleted, or never existed).
    Spreadsheet,
    /// The spreadsheet has no sheet with this gid (deleted).
    Sheet { gid: u64 },
}

/// What one call produced.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome<T> {
    Ok(T),
    /// 429: a per-user or per-project quota is spent. Google sends no
    /// `Retry-After`; `retry_after` is set only if a proxy sent one, and
    /// `quota` says which quota from the body's `ErrorInfo`.
    Throttled {
        quota: Option<QuotaViolation>,
        retry_after: Option<Duration>,
        error: Option<GoogleError>,
    },
    /// 401: the access token is missing, invalid or expired; refresh it and
    /// try once more.
    Unauthorized {
        error: Option<GoogleError>,
    },
    /// 403: the credential may not use this spreadsheet (unshared, or the
    /// API is off for the project).
    Forbidden {
        error: Option<GoogleError>,
    },
    NotFound {
        missing: Missing,
        error: Option<GoogleError>,
    },
    /// A 4xx other than the above. `range` is true when the range itself was
    /// refused (unknown sheet title, beyond the grid); the client has then
    /// forgotten the titles it cached for the spreadsheet. An unknown title
    /// is retryable (see the module docs).
    BadRequest {
        status: u16,
        range: bool,
        error: Option<GoogleError>,
    },
    /// Nothing was changed (a read, or a write that never left); retry.
    Unavailable {
        cause: Unavailable,
    },
    /// A write may or may not have been applied.
    OutcomeUnknown {
        cause: Unavailable,
    },
    /// The request could not be built (empty rows, unusable id).
    InvalidTarget {
        reason: String,
    },
}

impl<T> Outcome<T> {
    /// The error kind the state machine matches, `None` for `Ok`.
    pub fn error_kind(&self) -> Option<ErrorKind> {
        Some(match self {
            Self::Ok(_) => return None,
            Self::Throttled { .. } => ErrorKind::UpstreamThrottled,
            Self::Unauthorized { .. } => ErrorKind::Unauthorized,
            Self::Forbidden { .. } => ErrorKind::CredentialRejected,
            Self::NotFound { .. } => ErrorKind::NotFound,
            Self::BadRequest { error: Some(e), .. } if e.is_unknown_title() => ErrorKind::UpstreamUnavailable,
            Self::BadRequest { .. } | Self::InvalidTarget { .. } => ErrorKind::InvalidRequest,
            Self::Unavailable { .. } => ErrorKind::UpstreamUnavailable,
            Self::OutcomeUnknown { .. } => ErrorKind::OutcomeUnknown,
        })
    }

    /// The step error (kind and a cause without secrets), `None` for `Ok`.
    pub fn step_error(&self) -> Option<StepError> {
        self.error_kind().map(|kind| StepError::new(kind, self.to_string()))
    }

    /// Whether the call may have changed the sheet without saying so.
    pub fn is_unknown(&self) -> bool {
        matches!(self, Self::OutcomeUnknown { .. })
    }

    pub fn ok(self) -> Option<T> {
        match self {
            Self::Ok(value) => Some(value),
            _ => None,
        }
    }

    /// `Ok(value)`, or the failure as an outcome of any value type (a
    /// failure carries no value), for `?`-style early returns.
    #[allow(clippy::result_large_err, reason = "the failure is moved once to be returned, not passed around")]
    pub fn into_result<U>(self) -> Result<T, Outcome<U>> {
        Err(match self {
            Self::Ok(value) => return Ok(value),
            Self::Throttled { quota, retry_after, error } => Outcome::Throttled { quota, retry_after, error },
            Self::Unauthorized { error } => Outcome::Unauthorized { error },
            Self::Forbidden { error } => Outcome::Forbidden { error },
            Self::NotFound { missing, error } => Outcome::NotFound { missing, error },
            Self::BadRequest { status, range, error } => Outcome::BadRequest { status, range, error },
            Self::Unavailable { cause } => Outcome::Unavailable { cause },
            Self::OutcomeUnknown { cause } => Outcome::OutcomeUnknown { cause },
            Self::InvalidTarget { reason } => Outcome::InvalidTarget { reason },
        })
    }

    /// The same outcome with its `Ok` value mapped.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Outcome<U> {
        match self.into_result() {
            Ok(value) => Outcome::Ok(f(value)),
            Err(failure) => failure,
        }
    }

    /// The outcome of `f` on the `Ok` value, or this failure.
    pub fn and_then<U>(self, f: impl FnOnce(T) -> Outcome<U>) -> Outcome<U> {
        match self.into_result() {
            Ok(value) => f(value),
            Err(failure) => failure,
        }
    }
}

impl<T> fmt::Display for Outcome<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let error = |e: &Option<GoogleError>| match e {
            Some(e) => format!(" ({}: {})", e.status, e.message),
            None => String::new(),
        };
        match self {
            Self::Ok(_) => f.write_str("ok"),
            Self::Throttled { quota: Some(q), .. } => write!(f, "throttled by the Sheets quota {}", q.limit),
            Self::Throttled { quota: None, error: e, .. } => write!(f, "throttled{}", error(e)),
            Self::Unauthorized { error: e } => write!(f, "access token rejected{}", error(e)),
            Self::Forbidden { error: e } => write!(f, "no access to the spreadsheet{}", error(e)),
            Self::NotFound { missing: Missing::Spreadsheet, error: e } => {
                write!(f, "spreadsheet not found{}", error(e))
            }
            Self::NotFound { missing: Missing::Sheet { gid }, .. } => write!(f, "no sheet with gid {gid}"),
            Self::BadRequest { status, error: e, .. } => write!(f, "rejected with HTTP {status}{}", error(e)),
            Self::Unavailable { cause } => write!(f, "Sheets API unavailable: {cause}"),
            Self::OutcomeUnknown { cause } => write!(f, "write outcome unknown: {cause}"),
            Self::InvalidTarget { reason } => write!(f, "cannot call the Sheets API: {reason}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_follow_the_table() {
        let cases: [(Outcome<()>, Option<ErrorKind>); 10] = [
            (Outcome::Ok(()), None),
            (Outcome::Throttled { quota: None, retry_after: None, error: None }, Some(ErrorKind::UpstreamThrottled)),
            (Outcome::Unauthorized { error: None }, Some(ErrorKind::Unauthorized)),
            (Outcome::Forbidden { error: None }, Some(ErrorKind::CredentialRejected)),
            (Outcome::NotFound { missing: Missing::Spreadsheet, error: None }, Some(ErrorKind::NotFound)),
            (Outcome::NotFound { missing: Missing::Sheet { gid: 3 }, error: None }, Some(ErrorKind::NotFound)),
            (Outcome::BadRequest { status: 400, range: true, error: None }, Some(ErrorKind::InvalidRequest)),
            (Outcome::Unavailable { cause: Unavailable::Timeout }, Some(ErrorKind::UpstreamUnavailable)),
            (Outcome::OutcomeUnknown { cause: Unavailable::Timeout }, Some(ErrorKind::OutcomeUnknown)),
            (Outcome::InvalidTarget { reason: "x".into() }, Some(ErrorKind::InvalidRequest)),
        ];
        for (outcome, kind) in cases {
            assert_eq!(outcome.error_kind(), kind, "{outcome}");
            assert_eq!(outcome.step_error().map(|e| e.kind), kind);
        }
    }

    #[test]
    fn causes_name_the_problem_and_map_keeps_the_failure() {
        let down: Outcome<u8> =
            Outcome::OutcomeUnknown { cause: Unavailable::ServerError { status: 503, error: None } };
        assert_eq!(down.step_error().unwrap().cause, "write outcome unknown: HTTP 503");
        assert!(down.is_unknown());
        let mapped = down.map(|n| n + 1);
        assert!(matches!(mapped, Outcome::OutcomeUnknown { .. }));
        assert_eq!(Outcome::Ok(1u8).map(|n| n + 1).ok(), Some(2));
        assert_eq!(Outcome::Ok(1u8).and_then(|n| Outcome::Ok(n * 3)), Outcome::Ok(3));
        let throttled: Outcome<u8> = Outcome::Throttled { quota: None, retry_after: None, error: None };
        assert_eq!(throttled.clone().and_then(|n| Outcome::Ok(n * 3)), throttled);
        assert_eq!(throttled.into_result::<String>().unwrap_err().error_kind(), Some(ErrorKind::UpstreamThrottled));
        let renamed: Outcome<()> = Outcome::BadRequest {
            status: 400,
            range: true,
            error: Some(GoogleError::new(400, "INVALID_ARGUMENT", "Unable to parse range: 'Old'!A1")),
        };
        assert_eq!(renamed.error_kind(), Some(ErrorKind::UpstreamUnavailable));
        let gone: Outcome<()> = Outcome::NotFound { missing: Missing::Sheet { gid: 9 }, error: None };
        assert_eq!(gone.to_string(), "no sheet with gid 9");
    }
}
