//! Why an upstream HTTP API (Cafe24's Admin API, Google Sheets) or its
//! OAuth token endpoint gave no usable answer. The adapters classify the
//! same failures the same way and map them onto the same error kinds; only
//! the API's own error body differs, so it is the type parameter `E`.

use crate::{ErrorKind, OAuthError};
use std::fmt;
use std::time::Duration;

/// Why the upstream could not answer usefully; worth retrying.
#[derive(Debug, Clone, PartialEq)]
pub enum Unavailable<E> {
    ServerError {
        status: u16,
        error: Option<E>,
    },
    /// The whole-request deadline passed.
    Timeout,
    /// No connection was made (refused, DNS, connect timeout): the request
    /// never left.
    Connect(String),
    /// The connection broke while the answer was read.
    Body(String),
    /// A success status with a body that is not the expected JSON.
    InvalidBody(String),
}

impl<E: fmt::Display> fmt::Display for Unavailable<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ServerError { status, error: Some(e) } => write!(f, "HTTP {status} ({e})"),
            Self::ServerError { status, error: None } => write!(f, "HTTP {status}"),
            Self::Timeout => f.write_str("timed out"),
            Self::Connect(e) => write!(f, "connection failed: {e}"),
            Self::Body(e) => write!(f, "response broke off: {e}"),
            Self::InvalidBody(e) => write!(f, "unexpected response body: {e}"),
        }
    }
}

/// Why a refresh at an OAuth token endpoint produced no token; `E` is the
/// upstream's error body in an [`Unavailable::ServerError`]. `Display`
/// never includes a token or the client secret.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RefreshError<E> {
    /// The request could not be built (Cafe24: a mall id unusable in a
    /// URL). Google's endpoint is a fixed URL, so it never gives this.
    #[error("cannot refresh: {0}")]
    InvalidTarget(String),
    /// 400/401/403: the refresh token is unknown, spent (rotated), revoked
    /// or expired (`invalid_grant`), or the client credentials are wrong
    /// (`invalid_client`). A person must re-authorise the app.
    #[error("token endpoint rejected the refresh with {status}: {}", describe(.error))]
    Rejected { status: u16, error: Option<OAuthError> },
    #[error("token endpoint throttled the refresh (429)")]
    Throttled { retry_after: Option<Duration> },
    #[error("token endpoint unavailable: {0}")]
    Unavailable(Unavailable<E>),
    /// 200 with a body that is not a usable token response.
    #[error("token endpoint answered an unusable token response: {0}")]
    InvalidResponse(String),
}

fn describe(error: &Option<OAuthError>) -> String {
    match error {
        Some(OAuthError { error, error_description: Some(d) }) => format!("{error} ({d})"),
        Some(OAuthError { error, error_description: None }) => error.clone(),
        None => "no OAuth error body".into(),
    }
}

impl<E> RefreshError<E> {
    /// The state machine's view: a rejected refresh needs a person; a
    /// throttle or outage passes.
    pub fn error_kind(&self) -> ErrorKind {
        match self {
            Self::InvalidTarget(_) => ErrorKind::InvalidRequest,
            Self::Rejected { .. } => ErrorKind::CredentialRejected,
            Self::Throttled { .. } => ErrorKind::UpstreamThrottled,
            Self::Unavailable(_) | Self::InvalidResponse(_) => ErrorKind::UpstreamUnavailable,
        }
    }

    /// The refresh token itself is dead (revoked, expired, unknown).
    pub fn is_invalid_grant(&self) -> bool {
        matches!(self, Self::Rejected { error: Some(e), .. } if e.error == "invalid_grant")
    }
}
