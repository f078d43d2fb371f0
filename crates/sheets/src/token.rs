//! Google's OAuth 2.0 token endpoint, for the refresh grant.
//!
//! `POST https://oauth2.googleapis.com/token` with an
//! `application/x-www-form-urlencoded` body of `client_id`,
//! `client_secret`, `refresh_token` and `grant_type=refresh_token`
//! (Google's web-server guide, "Refreshing an access token") answers:
//!
//! ```json
//! {"access_token": "1/fFAGRNJru1FTz70BzhT3Zg", "expires_in": 3920,
//!  "scope": "https://www.googleapis.com/auth/spreadsheets", "token_type": "Bearer"}
//! ```
//!
//! (plus `refresh_token_expires_in` when the user granted time-limited
//! access). Unlike Cafe24, Google does not rotate the refresh token: the
//! answer has no `refresh_token`, and the old one stays good. Errors are
//! RFC 6749 bodies: a revoked, expired (six months unused, password change,
//! seven days for an app in testing) or unknown refresh token gives 400
//! `{"error": "invalid_grant", "error_description": "Token has been expired
//! or revoked."}`; wrong client credentials give 401 `invalid_client`.

use crate::error_body::GoogleError;
use serde::{Deserialize, Serialize};
use sluice_domain::Secret;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The token endpoint's success JSON, field for field. Tokens are
/// [`Secret`]s.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenResponse {
    pub access_token: Secret,
    /// Seconds the access token lives (Google: about an hour).
    pub expires_in: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    #[serde(default = "bearer")]
    pub token_type: String,
    /// Absent on a refresh; present when a code is exchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<Secret>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token_expires_in: Option<u64>,
}

fn bearer() -> String {
    "Bearer".to_owned()
}

/// A usable access token.
#[derive(Debug, Clone, PartialEq)]
pub struct AccessGrant {
    pub access_token: Secret,
    pub expires_in: Duration,
    /// `expires_in` from when the answer arrived, as Unix milliseconds on
    /// this machine's clock: for TTLs and "refresh before" checks.
    pub expires_at_unix_ms: i64,
    pub scope: Option<String>,
    /// A new refresh token, if Google sent one (it does not on a refresh);
    /// when present it replaces the stored one.
    pub refresh_token: Option<Secret>,
}

impl AccessGrant {
    /// Checks a token response received `at`.
    pub fn from_response(response: TokenResponse, at: SystemTime) -> Result<Self, String> {
        if response.access_token.is_empty() {
            return Err("token response has an empty access_token".into());
        }
        if !response.token_type.eq_ignore_ascii_case("bearer") {
            return Err(format!("token_type `{}` is not Bearer", response.token_type));
        }
        let expires_in = Duration::from_secs(response.expires_in);
        let received = at.duration_since(UNIX_EPOCH).unwrap_or_default();
        let expires_at_unix_ms = i64::try_from((received + expires_in).as_millis()).unwrap_or(i64::MAX);
        Ok(Self {
            access_token: response.access_token,
            expires_in,
            expires_at_unix_ms,
            scope: response.scope,
            refresh_token: response.refresh_token.filter(|t| !t.is_empty()),
        })
    }
}

/// Why a refresh produced no token.
pub type RefreshError = sluice_domain::upstream::RefreshError<GoogleError>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Unavailable;
    use sluice_domain::{ErrorKind, OAuthError};

    #[test]
    fn parses_googles_documented_refresh_answer() {
        let body = r#"{"access_token":"1/fFAGRNJru1FTz70BzhT3Zg","expires_in":3920,
            "scope":"https://www.googleapis.com/auth/drive.metadata.readonly","token_type":"Bearer"}"#;
        let at = UNIX_EPOCH + Duration::from_secs(1_000);
        let grant = AccessGrant::from_response(serde_json::from_str(body).unwrap(), at).unwrap();
        assert_eq!(grant.access_token.expose(), "1/fFAGRNJru1FTz70BzhT3Zg");
        assert_eq!((grant.expires_in.as_secs(), grant.expires_at_unix_ms), (3920, 4_920_000));
        assert_eq!(grant.refresh_token, None);
        assert!(!format!("{grant:?}").contains("fFAGRNJru1FTz70BzhT3Zg"));
    }

    #[test]
    fn unusable_answers_are_errors() {
        let response = |token: &str, kind: &str| TokenResponse {
            access_token: token.into(),
            expires_in: 3599,
            scope: None,
            token_type: kind.into(),
            refresh_token: None,
            refresh_token_expires_in: None,
        };
        assert!(AccessGrant::from_response(response("", "Bearer"), SystemTime::now()).is_err());
        assert!(AccessGrant::from_response(response("t", "MAC"), SystemTime::now()).is_err());
        assert!(AccessGrant::from_response(response("t", "bearer"), SystemTime::now()).is_ok());
    }

    #[test]
    fn errors_map_to_kinds() {
        let dead = RefreshError::Rejected {
            status: 400,
            error: Some(OAuthError::new("invalid_grant", "Token has been expired or revoked.")),
        };
        assert!(dead.is_invalid_grant());
        assert_eq!(dead.error_kind(), ErrorKind::CredentialRejected);
        assert_eq!(
            dead.to_string(),
            "token endpoint rejected the refresh with 400: invalid_grant (Token has been expired or revoked.)"
        );
        let client = RefreshError::Rejected { status: 401, error: Some(OAuthError::new("invalid_client", "x")) };
        assert!(!client.is_invalid_grant());
        assert_eq!(RefreshError::Unavailable(Unavailable::Timeout).error_kind(), ErrorKind::UpstreamUnavailable);
    }
}
