//! What the client needs to know: where the Sheets API and the OAuth token
//! endpoint live (configuration, so the sandbox can stand in for both), the
//! OAuth client's credentials, and how long to wait.

use sluice_domain::Secret;
use std::time::Duration;

/// The Sheets API host; every path starts with `/v4/spreadsheets/`.
pub const PRODUCTION_API_BASE_URL: &str = "https://sheets.googleapis.com";

/// Google's OAuth 2.0 token endpoint (the `token_uri` of a downloaded
/// client secret).
pub const PRODUCTION_TOKEN_URL: &str = "https://oauth2.googleapis.com/token";

/// A configuration the client cannot work with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("`{0}` must be an http:// or https:// URL without query or fragment")]
    BadUrl(String),
    /// The TLS/HTTP stack refused to start (no usable TLS backend).
    #[error("cannot build the HTTP client: {0}")]
    HttpClient(String),
}

/// The client's configuration. `Debug` is safe to print: the client secret
/// is a [`Secret`].
#[derive(Debug, Clone)]
pub struct SheetsConfig {
    /// Without a trailing slash, e.g. `https://sheets.googleapis.com`.
    pub api_base_url: String,
    pub token_url: String,
    /// The OAuth client id (not secret: it appears in consent URLs).
    pub client_id: String,
    pub client_secret: Secret,
    /// Whole-request deadline, connect included. An append of a few
    /// thousand rows takes Google seconds, and the flush step runs inside a
    /// Lambda with its own timeout: this must sit between the two.
    pub request_timeout: Duration,
    pub connect_timeout: Duration,
}

impl SheetsConfig {
    /// Production endpoints for the given OAuth client.
    pub fn new(client_id: impl Into<String>, client_secret: impl Into<Secret>) -> Self {
        Self {
            api_base_url: PRODUCTION_API_BASE_URL.to_owned(),
            token_url: PRODUCTION_TOKEN_URL.to_owned(),
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            request_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
        }
    }

    /// Another Sheets API host (the sandbox: `http://127.0.0.1:PORT`).
    pub fn with_api_base_url(mut self, url: impl Into<String>) -> Result<Self, ConfigError> {
        self.api_base_url = check_url(url.into())?.trim_end_matches('/').to_owned();
        Ok(self)
    }

    /// Another token endpoint (the sandbox: `http://127.0.0.1:PORT/token`).
    pub fn with_token_url(mut self, url: impl Into<String>) -> Result<Self, ConfigError> {
        self.token_url = check_url(url.into())?;
        Ok(self)
    }

    pub fn with_timeouts(mut self, request: Duration, connect: Duration) -> Self {
        self.request_timeout = request;
        self.connect_timeout = connect;
        self
    }

    /// Checks both URLs: the fields are public, so a configuration built
    /// field by field has not been through the `with_*` checks.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_url(self.api_base_url.clone())?;
        check_url(self.token_url.clone())?;
        Ok(())
    }
}

fn check_url(url: String) -> Result<String, ConfigError> {
    match reqwest::Url::parse(&url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.query().is_none() && u.fragment().is_none() => Ok(url),
        _ => Err(ConfigError::BadUrl(url)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked_and_trimmed() {
        let c = SheetsConfig::new("id", "secret").with_api_base_url("http://127.0.0.1:9/").unwrap();
        assert_eq!(c.api_base_url, "http://127.0.0.1:9");
        assert_eq!(c.token_url, PRODUCTION_TOKEN_URL);
        for bad in ["ftp://x", "not a url", "https://x/?a=b", "https://x/#f"] {
            assert!(SheetsConfig::new("id", "s").with_token_url(bad).is_err(), "{bad}");
        }
        assert_eq!(c.validate(), Ok(()));
        let built = SheetsConfig { api_base_url: "sheets.googleapis.com".into(), ..c };
        assert_eq!(built.validate(), Err(ConfigError::BadUrl("sheets.googleapis.com".into())));
    }

    #[test]
    fn debug_hides_the_client_secret() {
        let debug = format!("{:?}", SheetsConfig::new("client", "very-secret-value"));
        assert!(!debug.contains("very-secret-value") && debug.contains("***"), "{debug}");
    }
}
