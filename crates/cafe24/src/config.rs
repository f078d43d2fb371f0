//! What the client needs to know: where each mall's API lives, which API
//! version to ask for, the app's credentials, and how long to wait.

use sluice_domain::Secret;
use std::time::Duration;

/// The placeholder a base URL template must contain once.
pub const MALL_ID_PLACEHOLDER: &str = "{mall_id}";

/// Cafe24's production host per mall: `https://{mall_id}.cafe24api.com`
/// (every Admin API path starts with `/api/v2/admin/`, the token endpoint is
/// `/api/v2/oauth/token`).
pub const PRODUCTION_BASE_URL_TEMPLATE: &str = "https://{mall_id}.cafe24api.com";

/// The `X-Cafe24-Api-Version` sent by default: the latest version Cafe24's
/// Admin API reference listed when this was written ("Version 2025-12-01
/// (latest)"). Without the header Cafe24 answers with the version set on the
/// app in the developer centre, which can change under us; sending one
/// keeps the response shape fixed. A version expires at most a year after
/// its successor ships, so this is configuration.
pub const DEFAULT_API_VERSION: &str = "2025-12-01";

/// Longest mall id accepted. Cafe24 mall ids are short lowercase account
/// names; the bound only keeps hostile input out of host names and keys.
pub const MAX_MALL_ID_LEN: usize = 64;

/// A problem with the client's configuration or with a mall id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("base URL template `{0}` must start with http:// or https:// and contain {{mall_id}} exactly once")]
    BadTemplate(String),
    #[error("mall id `{0}` must be 1 to 64 ASCII letters, digits, '-' or '_'")]
    BadMallId(String),
    #[error("the resulting URL is not valid: {0}")]
    BadUrl(String),
}

/// Where one mall's API lives, as a template over the mall id:
/// production is `https://{mall_id}.cafe24api.com`; the sandbox serves every
/// mall under a path prefix, e.g. `http://127.0.0.1:9024/malls/{mall_id}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseUrlTemplate(String);

impl BaseUrlTemplate {
    pub fn new(template: impl Into<String>) -> Result<Self, ConfigError> {
        let template = template.into();
        let trimmed = template.trim_end_matches('/');
        let scheme_ok = trimmed.starts_with("http://") || trimmed.starts_with("https://");
        if !scheme_ok || trimmed.matches(MALL_ID_PLACEHOLDER).count() != 1 {
            return Err(ConfigError::BadTemplate(template));
        }
        Ok(Self(trimmed.to_owned()))
    }

    pub fn production() -> Self {
        Self(PRODUCTION_BASE_URL_TEMPLATE.to_owned())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The base URL of one mall, without a trailing slash.
    pub fn for_mall(&self, mall_id: &str) -> Result<String, ConfigError> {
        check_mall_id(mall_id)?;
        Ok(self.0.replace(MALL_ID_PLACEHOLDER, mall_id))
    }
}

/// A mall id becomes part of a host name (production) or a path (sandbox),
/// so only characters that are safe in both are accepted.
pub fn check_mall_id(mall_id: &str) -> Result<(), ConfigError> {
    let ok = !mall_id.is_empty()
        && mall_id.len() <= MAX_MALL_ID_LEN
        && mall_id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok { Ok(()) } else { Err(ConfigError::BadMallId(mall_id.to_owned())) }
}

/// The client's configuration. `Debug` is safe to print: the client secret
/// is a [`Secret`].
#[derive(Debug, Clone)]
pub struct Cafe24Config {
    pub base_url: BaseUrlTemplate,
    /// Sent as `X-Cafe24-Api-Version` on every Admin API call.
    pub api_version: String,
    /// The app's client id (not secret: Cafe24 echoes it in token responses).
    pub client_id: String,
    pub client_secret: Secret,
    /// Whole-request deadline, connect included. A fetch step runs inside a
    /// Lambda with its own timeout; this must stay well below it.
    pub request_timeout: Duration,
    pub connect_timeout: Duration,
}

impl Cafe24Config {
    /// Production defaults for the given app credentials.
    pub fn new(client_id: impl Into<String>, client_secret: impl Into<Secret>) -> Self {
        Self {
            base_url: BaseUrlTemplate::production(),
            api_version: DEFAULT_API_VERSION.to_owned(),
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            request_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(3),
        }
    }

    pub fn with_base_url(mut self, base_url: BaseUrlTemplate) -> Self {
        self.base_url = base_url;
        self
    }

    pub fn with_timeouts(mut self, request: Duration, connect: Duration) -> Self {
        self.request_timeout = request;
        self.connect_timeout = connect;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_need_a_scheme_and_one_placeholder() {
        assert!(BaseUrlTemplate::new("https://{mall_id}.cafe24api.com").is_ok());
        assert!(BaseUrlTemplate::new("ftp://{mall_id}.example").is_err());
        assert!(BaseUrlTemplate::new("https://example.com").is_err());
        assert!(BaseUrlTemplate::new("https://{mall_id}/{mall_id}").is_err());
        let t = BaseUrlTemplate::new("http://127.0.0.1:9024/malls/{mall_id}/").unwrap();
        assert_eq!(t.for_mall("acme").unwrap(), "http://127.0.0.1:9024/malls/acme");
    }

    #[test]
    fn mall_ids_cannot_smuggle_hosts_or_paths() {
        let t = BaseUrlTemplate::production();
        assert_eq!(t.for_mall("acme-1").unwrap(), "https://acme-1.cafe24api.com");
        for bad in ["", "evil.com/", "a b", "a/b", "a?b", "a@b", &"x".repeat(65)] {
            assert!(matches!(t.for_mall(bad), Err(ConfigError::BadMallId(_))), "{bad}");
        }
    }

    #[test]
    fn debug_hides_the_client_secret() {
        let config = Cafe24Config::new("client", "very-secret-value");
        let debug = format!("{config:?}");
        assert!(!debug.contains("very-secret-value"), "{debug}");
        assert!(debug.contains("***"));
    }
}
