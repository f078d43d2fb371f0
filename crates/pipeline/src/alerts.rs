//! Alerts for what needs a person (a credential Google rejects, a sheet
//! that is gone, a mall whose Cafe24 token is refused) and for trouble
//! that lasts (a sheet's flushes delayed again and again, a mall's fetches
//! failing): Slack-compatible incoming-webhook POSTs (`{"text": …}`) to a
//! configured URL. [`Alerter::alert`] sends at most one per key per
//! window, so a storm of failures on one sheet sends one message;
//! [`Alerter::episode`] sends one when an episode starts and one when it
//! ends, as `sluice_redis::episode` (or a parked mall's parking) decides, so
//! the two always come in pairs. Without a URL, alerts are logged only. An
//! alert that cannot be sent is logged; it never fails the work that
//! raised it. No alert text holds a token: callers put in ids and the
//! upstream's error, never a credential.
//!
//! Ids come from requests, so the text is escaped for Slack's format
//! before it is sent: `&`, `<` and `>` become `&amp;`, `&lt;` and `&gt;`,
//! the three characters Slack asks to be escaped
//! (<https://api.slack.com/reference/surfaces/formatting#escaping>), so an
//! id such as `<https://evil|sign in>` shows as text instead of a link.
//! Commands in alerts are shell-quoted ([`crate::suggested_command`]).

use redis::aio::ConnectionLike;
use serde_json::json;
use sluice_redis::{Gates, Keyspace, Tag};
use std::time::Duration;

/// How long an episode of failures outlives its latest failure when
/// nothing succeeds or fails any more (see `sluice_redis::episode`).
pub(crate) const EPISODE_TTL: Duration = Duration::from_secs(24 * 3600);

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
        self.post(text).await
    }

    /// Sends `text` about an episode's start or end (`key` names it in
    /// the log). Not gated by the window: the episode already allows one
    /// of each, and a gated end could be lost while its start was sent.
    pub async fn episode(&self, key: &str, text: &str) -> bool {
        tracing::error!(alert = key, "{text}");
        self.post(text).await
    }

    async fn post(&self, text: &str) -> bool {
        let Some(url) = &self.url else { return true };
        match self.http.post(url).json(&json!({ "text": slack_escaped(text) })).send().await {
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

/// `text` with Slack's three control characters escaped.
pub fn slack_escaped(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_in_an_id_is_shown_as_text() {
        let text = "credential `<https://evil.example/login|Sign in to Google>` was rejected & held";
        assert_eq!(
            slack_escaped(text),
            "credential `&lt;https://evil.example/login|Sign in to Google&gt;` was rejected &amp; held"
        );
    }
}
