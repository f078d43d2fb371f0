//! An OAuth 2.0 error body (RFC 6749, section 5.2), as both token
//! endpoints sluice talks to answer it: Cafe24's and Google's.

use serde::{Deserialize, Serialize};

/// An OAuth 2.0 error body from the token endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OAuthError {
    pub error: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_description: Option<String>,
}

impl OAuthError {
    pub fn new(error: impl Into<String>, description: impl Into<String>) -> Self {
        Self { error: error.into(), error_description: Some(description.into()) }
    }

    /// Parses an RFC 6749 error body; `None` for any other shape.
    pub fn parse(body: &[u8]) -> Option<Self> {
        serde_json::from_slice(body).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_oauth_errors() {
        let e = OAuthError::parse(br#"{"error":"invalid_grant","error_description":"expired"}"#).unwrap();
        assert_eq!(e, OAuthError::new("invalid_grant", "expired"));
        assert_eq!(OAuthError::parse(br#"{"error":{"code":1}}"#), None);
    }
}
