//! Cafe24's OAuth token response and the outcome of a refresh.
//!
//! `POST /api/v2/oauth/token` with `Authorization: Basic
//! base64(client_id:client_secret)` and the form
//! `grant_type=refresh_token&refresh_token=…` answers (Cafe24's guide):
//!
//! ```json
//! {"access_token": "…", "expires_at": "2018-01-08T19:15:21.981",
//!  "refresh_token": "…", "refresh_token_expires_at": "2018-01-22T17:15:22.083",
//!  "client_id": "…", "mall_id": "…", "user_id": "…",
//!  "scopes": ["mall.read_product", …], "issued_at": "2018-01-08T17:15:22.083"}
//! ```
//!
//! An access token lives two hours, a refresh token two weeks, and a refresh
//! *rotates* the refresh token: "the old refresh token can no longer be
//! used". Two refreshes racing with the same refresh token therefore leave
//! one of them with `invalid_grant`, which is why the token step refreshes
//! under the mall's lock.
//!
//! The times carry no UTC offset; Cafe24 documents its dates as Korea time
//! (`+09:00`), so an offset-less time is read as KST.

use crate::error_body::Cafe24Error;
use chrono::{DateTime, FixedOffset, NaiveDateTime};
use serde::{Deserialize, Serialize};
use sluice_domain::Secret;

/// Korea Standard Time, the offset of Cafe24's dates.
pub fn kst() -> FixedOffset {
    FixedOffset::east_opt(9 * 3600).expect("+09:00 is a valid offset")
}

/// Parses a Cafe24 time: RFC 3339 (`2025-01-02T03:04:05+09:00`), or a local
/// time without offset (`2018-01-08T19:15:21.981`), read as KST.
pub fn parse_cafe24_time(text: &str) -> Option<DateTime<FixedOffset>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Some(t);
    }
    let naive = NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f").ok()?;
    naive.and_local_timezone(kst()).single()
}

/// Formats a time the way the token endpoint does: KST, milliseconds, no
/// offset (`2018-01-08T19:15:21.981`).
pub fn format_token_time(time: DateTime<FixedOffset>) -> String {
    time.with_timezone(&kst()).format("%Y-%m-%dT%H:%M:%S%.3f").to_string()
}

/// Formats a resource date the way the Admin API does:
/// `2025-01-02T03:04:05+09:00`.
pub fn format_resource_time(time: DateTime<FixedOffset>) -> String {
    time.with_timezone(&kst()).format("%Y-%m-%dT%H:%M:%S%:z").to_string()
}

/// The token endpoint's JSON, field for field. Tokens are [`Secret`]s.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenResponse {
    pub access_token: Secret,
    pub expires_at: String,
    pub refresh_token: Secret,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token_expires_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mall_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    #[serde(default)]
    pub scopes: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issued_at: Option<String>,
}

/// A token response with its times parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenGrant {
    pub access_token: Secret,
    pub expires_at: DateTime<FixedOffset>,
    pub refresh_token: Secret,
    pub refresh_token_expires_at: Option<DateTime<FixedOffset>>,
    pub mall_id: Option<String>,
    pub client_id: Option<String>,
    pub user_id: Option<String>,
    pub scopes: Vec<String>,
    pub issued_at: Option<DateTime<FixedOffset>>,
}

impl TokenGrant {
    /// Checks and parses a token response. Missing tokens or an unreadable
    /// `expires_at` are errors; optional times that do not parse are dropped.
    pub fn from_response(response: TokenResponse) -> Result<Self, String> {
        if response.access_token.is_empty() || response.refresh_token.is_empty() {
            return Err("token response lacks access_token or refresh_token".into());
        }
        let expires_at = parse_cafe24_time(&response.expires_at)
            .ok_or_else(|| format!("expires_at `{}` is not a Cafe24 time", response.expires_at))?;
        let parse = |t: &Option<String>| t.as_deref().and_then(parse_cafe24_time);
        Ok(Self {
            refresh_token_expires_at: parse(&response.refresh_token_expires_at),
            issued_at: parse(&response.issued_at),
            access_token: response.access_token,
            expires_at,
            refresh_token: response.refresh_token,
            mall_id: response.mall_id,
            client_id: response.client_id,
            user_id: response.user_id,
            scopes: response.scopes,
        })
    }

    /// `expires_at` as Unix milliseconds, for TTLs and comparisons.
    pub fn expires_at_unix_ms(&self) -> i64 {
        self.expires_at.timestamp_millis()
    }
}

/// Why a refresh did not produce a token.
pub type RefreshError = sluice_domain::upstream::RefreshError<Cafe24Error>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fetch::Unavailable;
    use sluice_domain::{ErrorKind, OAuthError};

    #[test]
    fn offsetless_times_are_korea_time() {
        let t = parse_cafe24_time("2018-01-08T19:15:21.981").unwrap();
        assert_eq!(t.to_rfc3339(), "2018-01-08T19:15:21.981+09:00");
        assert_eq!(format_token_time(t), "2018-01-08T19:15:21.981");
        let t = parse_cafe24_time("2025-01-02T03:04:05+09:00").unwrap();
        assert_eq!(format_resource_time(t), "2025-01-02T03:04:05+09:00");
        let utc = parse_cafe24_time("2025-01-01T18:04:05Z").unwrap();
        assert_eq!(format_resource_time(utc), "2025-01-02T03:04:05+09:00");
        assert_eq!(parse_cafe24_time("yesterday"), None);
    }

    #[test]
    fn parses_cafe24s_documented_response() {
        let body = r#"{"access_token":"HVBVuQgjIRUGHE5CBOiKRGC","expires_at":"2018-01-08T19:15:21.981",
            "refresh_token":"euIChI80BQWWCJEiwTHWCrG","refresh_token_expires_at":"2018-01-22T17:15:22.083",
            "client_id":"KxVwdBN7OVtnbS3F0s7S1MD","mall_id":"acme","user_id":"acme",
            "scopes":["mall.read_product","mall.read_order"],"issued_at":"2018-01-08T17:15:22.083"}"#;
        let grant = TokenGrant::from_response(serde_json::from_str(body).unwrap()).unwrap();
        assert_eq!(grant.access_token.expose(), "HVBVuQgjIRUGHE5CBOiKRGC");
        assert_eq!(grant.expires_at_unix_ms(), 1_515_406_521_981);
        assert_eq!(grant.mall_id.as_deref(), Some("acme"));
        assert_eq!(grant.scopes.len(), 2);
        let debug = format!("{grant:?}");
        assert!(!debug.contains("HVBVuQgjIRUGHE5CBOiKRGC") && !debug.contains("euIChI80BQWWCJEiwTHWCrG"), "{debug}");
    }

    #[test]
    fn unusable_responses_are_errors() {
        let response = |expires: &str, access: &str| TokenResponse {
            access_token: access.into(),
            expires_at: expires.into(),
            refresh_token: "r".into(),
            refresh_token_expires_at: None,
            client_id: None,
            mall_id: None,
            user_id: None,
            scopes: vec![],
            issued_at: None,
        };
        assert!(TokenGrant::from_response(response("soon", "a")).is_err());
        assert!(TokenGrant::from_response(response("2018-01-08T19:15:21.981", "")).is_err());
    }

    #[test]
    fn refresh_errors_map_to_kinds_and_never_print_tokens() {
        let rejected = RefreshError::Rejected { status: 400, error: Some(OAuthError::new("invalid_grant", "spent")) };
        assert_eq!(rejected.error_kind(), ErrorKind::CredentialRejected);
        assert_eq!(rejected.to_string(), "token endpoint rejected the refresh with 400: invalid_grant (spent)");
        assert_eq!(RefreshError::Throttled { retry_after: None }.error_kind(), ErrorKind::UpstreamThrottled);
        assert_eq!(RefreshError::Unavailable(Unavailable::Timeout).error_kind(), ErrorKind::UpstreamUnavailable);
    }
}
