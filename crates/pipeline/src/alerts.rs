//! Alerts for what needs a person (a credential Google rejects, a sheet
//! that is gone): Slack-compatible incoming-webhook POSTs (`{"text": …}`)
//! to a configured URL, at most one per key per window, so a storm of
//! failures on one sheet sends one message. Without a URL, alerts are
//! logged only. An alert that cannot be sent is logged; it never fails
//! the work that raised it.

use redis::aio::ConnectionLike;
use serde_json::json;
use sluice_redis::{Gates, Keyspace, Tag};
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Alerter<C> {
    url: Option<String>,
    window: Duration,
    gates: Gates<C>,
    http: reqwest::Client,
}

impl<C: ConnectionLike + Clone + Send + Sync> Alerter<C> {
    pub fn new(conn: C, keyspace: Keyspace, url: Option<String>, window: Duration) -> Self {
        let http = sluice_http::builder().timeout(Duration::from_secs(5)).build().unwrap_or_default();
        Self { url, window, gates: Gates::new(conn, keyspace), http }
    }

    pub fn with_url(mut self, url: Option<String>) -> Self {
        self.url = url;
        self
    }

    /// Sends `text` unless an alert with the same key went out within the
    /// window. Returns whether it was sent (or would have been, without a
    /// URL).
    pub async fn alert(&self, key: &str, text: &str) -> bool {
        tracing::error!(alert = key, "{text}");
        match self.gates.pass(&Tag::new("alerts"), key, self.window).await {
            Ok(entry) if !entry.passed() => return false,
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "alert gate unavailable; sending anyway"),
        }
        let Some(url) = &self.url else { return true };
        match self.http.post(url).json(&json!({ "text": text })).send().await {
            Ok(response) if response.status().is_success() => true,
            Ok(response) => {
                tracing::warn!(status = %response.status(), "the alert webhook refused the alert");
                false
            }
            Err(e) => {
                tracing::warn!(error = %e, "the alert webhook could not be reached");
                false
            }
        }
    }
}
