//! The Admin API client: one `reqwest::Client` (rustls, connection pool,
//! timeouts) built once and shared; cloning a [`Cafe24Client`] is cheap.

use crate::config::{Cafe24Config, ConfigError};
use crate::error_body::Cafe24Error;
use crate::fetch::{FetchOutcome, Found, Unavailable};
use crate::resource::{SANDBOX_VERSION_FIELD, UPDATED_DATE_FIELD, admin_resource};
use crate::token::{RefreshError, TokenGrant, TokenResponse};
use crate::usage::CallUsage;
use base64::Engine;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, RETRY_AFTER};
use reqwest::{StatusCode, Url};
use sluice_domain::OAuthError;
use sluice_domain::ResourceKind;
use sluice_domain::Secret;
use std::sync::Arc;
use std::time::Duration;

/// The header naming the API version a call wants.
pub const API_VERSION_HEADER: &str = "x-cafe24-api-version";

/// The client could not be built.
#[derive(Debug, thiserror::Error)]
#[error("cannot build the Cafe24 HTTP client: {0}")]
pub struct ClientError(String);

/// A Cafe24 Admin API client. `Debug` shows the configuration with the
/// client secret redacted.
#[derive(Debug, Clone)]
pub struct Cafe24Client {
    http: reqwest::Client,
    config: Arc<Cafe24Config>,
    /// `Basic base64(client_id:client_secret)`, computed once.
    basic_auth: Secret,
}

impl Cafe24Client {
    pub fn new(config: Cafe24Config) -> Result<Self, ClientError> {
        let http = sluice_http::builder()
            .timeout(config.request_timeout)
            .connect_timeout(config.connect_timeout)
            .build()
            .map_err(|e| ClientError(e.to_string()))?;
        let credentials = format!("{}:{}", config.client_id, config.client_secret.expose());
        let basic_auth =
            Secret::new(format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(credentials)));
        Ok(Self { http, config: Arc::new(config), basic_auth })
    }

    pub fn config(&self) -> &Cafe24Config {
        &self.config
    }

    /// `{base}/api/v2/admin/{products|orders|customersprivacy}/{id}`, the id
    /// percent-encoded as one path segment.
    pub fn resource_url(&self, mall_id: &str, kind: ResourceKind, id: &str) -> Result<Url, ConfigError> {
        self.mall_url(mall_id, &["api", "v2", "admin", admin_resource(kind).path, id])
    }

    /// `{base}/api/v2/oauth/token`.
    pub fn token_url(&self, mall_id: &str) -> Result<Url, ConfigError> {
        self.mall_url(mall_id, &["api", "v2", "oauth", "token"])
    }

    /// The mall's base URL with `segments` appended, each percent-encoded.
    fn mall_url(&self, mall_id: &str, segments: &[&str]) -> Result<Url, ConfigError> {
        let base = self.config.base_url.for_mall(mall_id)?;
        let mut url = Url::parse(&base).map_err(|e| ConfigError::BadUrl(e.to_string()))?;
        // `extend` appends after the last segment; drop an empty trailing one.
        url.path_segments_mut()
            .map_err(|()| ConfigError::BadUrl("base URL cannot have a path".into()))?
            .pop_if_empty()
            .extend(segments);
        Ok(url)
    }

    /// `GET` one product, order or customer of a mall.
    pub async fn fetch(&self, mall_id: &str, kind: ResourceKind, id: &str, access_token: &Secret) -> FetchOutcome {
        let url = match self.resource_url(mall_id, kind, id) {
            Ok(url) => url,
            Err(e) => return FetchOutcome::InvalidTarget { reason: e.to_string() },
        };
        let request = self
            .http
            .get(url)
            .header(AUTHORIZATION, format!("Bearer {}", access_token.expose()))
            .header(API_VERSION_HEADER, &self.config.api_version)
            .header(CONTENT_TYPE, "application/json");
        let response = match request.send().await {
            Ok(response) => response,
            Err(e) => return FetchOutcome::Unavailable { cause: transport_failure(&e), usage: None },
        };
        let status = response.status();
        let headers = response.headers().clone();
        let usage = CallUsage::from_headers(&headers);
        let body = match response.bytes().await {
            Ok(body) => body,
            Err(e) => return FetchOutcome::Unavailable { cause: transport_failure(&e), usage: Some(usage) },
        };
        let error = || Cafe24Error::parse(&body);
        match status {
            StatusCode::OK => found(kind, &body, usage),
            StatusCode::NOT_FOUND => FetchOutcome::NotFound { error: error(), usage },
            StatusCode::UNAUTHORIZED => FetchOutcome::Unauthorized { error: error(), usage },
            StatusCode::TOO_MANY_REQUESTS => {
                let retry_after = usage.quota_wait().or_else(|| retry_after_header(&headers));
                FetchOutcome::Throttled { retry_after, error: error(), usage }
            }
            s if s.is_server_error() => FetchOutcome::Unavailable {
                cause: Unavailable::ServerError { status: s.as_u16(), error: error() },
                usage: Some(usage),
            },
            s if s.is_client_error() => FetchOutcome::Rejected { status: s.as_u16(), error: error(), usage },
            s => FetchOutcome::Unavailable {
                cause: Unavailable::InvalidBody(format!("unexpected status {s}")),
                usage: Some(usage),
            },
        }
    }

    /// Exchanges a refresh token for a new access token (and a new refresh
    /// token: the old one is spent).
    pub async fn refresh(&self, mall_id: &str, refresh_token: &Secret) -> Result<TokenGrant, RefreshError> {
        let url = self.token_url(mall_id).map_err(|e| RefreshError::InvalidTarget(e.to_string()))?;
        let response = self
            .http
            .post(url)
            .header(AUTHORIZATION, self.basic_auth.expose())
            .form(&[("grant_type", "refresh_token"), ("refresh_token", refresh_token.expose())])
            .send()
            .await
            .map_err(|e| RefreshError::Unavailable(transport_failure(&e)))?;
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.bytes().await.map_err(|e| RefreshError::Unavailable(transport_failure(&e)))?;
        match status {
            StatusCode::OK => {
                let response: TokenResponse = serde_json::from_slice(&body)
                    .map_err(|e| RefreshError::InvalidResponse(format!("not a token response: {e}")))?;
                let grant = TokenGrant::from_response(response).map_err(RefreshError::InvalidResponse)?;
                match grant.mall_id.as_deref() {
                    Some(other) if other != mall_id => {
                        Err(RefreshError::InvalidResponse(format!("token issued for mall `{other}`, not `{mall_id}`")))
                    }
                    _ => Ok(grant),
                }
            }
            StatusCode::TOO_MANY_REQUESTS => {
                let usage = CallUsage::from_headers(&headers);
                Err(RefreshError::Throttled {
                    retry_after: usage.quota_wait().or_else(|| retry_after_header(&headers)),
                })
            }
            s if s.is_server_error() => Err(RefreshError::Unavailable(Unavailable::ServerError {
                status: s.as_u16(),
                error: Cafe24Error::parse(&body),
            })),
            s => Err(RefreshError::Rejected { status: s.as_u16(), error: OAuthError::parse(&body) }),
        }
    }
}

fn found(kind: ResourceKind, body: &[u8], usage: CallUsage) -> FetchOutcome {
    let key = admin_resource(kind).response_key;
    let invalid = |why: String| FetchOutcome::Unavailable { cause: Unavailable::InvalidBody(why), usage: Some(usage) };
    let mut value: serde_json::Value = match serde_json::from_slice(body) {
        Ok(value) => value,
        Err(e) => return invalid(format!("not JSON: {e}")),
    };
    let resource = match value.get_mut(key).map(serde_json::Value::take) {
        Some(resource @ serde_json::Value::Object(_)) => resource,
        _ => return invalid(format!("no `{key}` object in the response")),
    };
    let updated_date = resource.get(UPDATED_DATE_FIELD).and_then(|v| v.as_str()).map(str::to_owned);
    let version = resource.get(SANDBOX_VERSION_FIELD).and_then(serde_json::Value::as_u64);
    FetchOutcome::Found(Found { resource, updated_date, version, usage })
}

/// `Retry-After` in seconds (Cafe24 documents the `Remain` headers instead;
/// a proxy in front may still send this).
fn retry_after_header(headers: &HeaderMap) -> Option<Duration> {
    let secs: u64 = headers.get(RETRY_AFTER)?.to_str().ok()?.trim().parse().ok()?;
    Some(Duration::from_secs(secs)).filter(|d| *d <= crate::usage::MAX_REMAIN)
}

fn transport_failure(e: &reqwest::Error) -> Unavailable {
    if e.is_timeout() {
        Unavailable::Timeout
    } else if e.is_connect() {
        Unavailable::Connect(e.to_string())
    } else {
        Unavailable::Body(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BaseUrlTemplate;

    fn client(template: &str) -> Cafe24Client {
        let config = Cafe24Config::new("app", "s3cr3t-value").with_base_url(BaseUrlTemplate::new(template).unwrap());
        Cafe24Client::new(config).unwrap()
    }

    #[test]
    fn urls_follow_the_template_and_encode_ids() {
        let c = client("https://{mall_id}.cafe24api.com");
        assert_eq!(
            c.resource_url("acme", ResourceKind::Product, "17").unwrap().as_str(),
            "https://acme.cafe24api.com/api/v2/admin/products/17"
        );
        assert_eq!(
            c.resource_url("acme", ResourceKind::Customer, "a/../b?c").unwrap().as_str(),
            "https://acme.cafe24api.com/api/v2/admin/customersprivacy/a%2F..%2Fb%3Fc"
        );
        assert_eq!(c.token_url("acme").unwrap().as_str(), "https://acme.cafe24api.com/api/v2/oauth/token");
        let sandbox = client("http://127.0.0.1:9/malls/{mall_id}");
        assert_eq!(
            sandbox.resource_url("m1", ResourceKind::Order, "20250101-0000001").unwrap().as_str(),
            "http://127.0.0.1:9/malls/m1/api/v2/admin/orders/20250101-0000001"
        );
        assert!(sandbox.resource_url("bad mall", ResourceKind::Order, "1").is_err());
    }

    #[test]
    fn debug_never_shows_the_secret_or_basic_credentials() {
        let c = client("https://{mall_id}.cafe24api.com");
        let debug = format!("{c:?}");
        let encoded = base64::engine::general_purpose::STANDARD.encode("app:s3cr3t-value");
        assert!(!debug.contains("s3cr3t-value") && !debug.contains(&encoded), "{debug}");
    }
}
