//! Delivering a webhook the way Cafe24 does: `POST` the JSON body to the
//! app's URL with `X-API-Key` and a fresh `X-Trace-ID`, and note what the
//! receiver answered.

use crate::cafe24::config::WebhookTarget;
use serde::Serialize;
use sluice_cafe24::WebhookBody;
use sluice_cafe24::webhook::{API_KEY_HEADER, TRACE_ID_HEADER};

/// One delivery attempt and its result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WebhookDelivery {
    pub event_no: u32,
    /// The `X-Trace-ID` sent; a resend carries the same one.
    pub trace_id: String,
    pub body: WebhookBody,
    /// The status the target answered; `None` when it did not answer.
    pub status: Option<u16>,
    /// Why there is no status (connection refused, timeout).
    pub error: Option<String>,
}

impl WebhookDelivery {
    /// Whether the target answered 2xx.
    pub fn delivered(&self) -> bool {
        self.status.is_some_and(|s| (200..300).contains(&s))
    }
}

pub(crate) async fn deliver(
    http: &reqwest::Client,
    target: &WebhookTarget,
    body: WebhookBody,
    trace_id: String,
) -> WebhookDelivery {
    let result = http
        .post(&target.url)
        .header(API_KEY_HEADER, target.api_key.expose())
        .header(TRACE_ID_HEADER, &trace_id)
        .json(&body)
        .send()
        .await;
    let (status, error) = match result {
        Ok(response) => (Some(response.status().as_u16()), None),
        // The error names the URL, never the key (it is a header).
        Err(e) => (None, Some(e.to_string())),
    };
    WebhookDelivery { event_no: body.event_no, trace_id, body, status, error }
}
