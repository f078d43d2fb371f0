//! The ingest function's variables: the FIFO queue it sends to, the API
//! keys it accepts, and its timings.
//!
//! Ingest's other bound, `max_accepting` (webhooks accepted at once), is
//! no variable: an execution environment behind API Gateway serves one
//! request at a time, so it could never bite; the function's concurrency
//! is that bound in AWS, and `accept_deadline_ms` answers a slow Redis.

use crate::source::parsed;
use crate::variables::{Variable, var};
use serde::{Deserialize, Serialize};
use sluice_ingest::config::{DEFAULT_ACCEPT_DEADLINE, DEFAULT_ACCEPT_LEASE, DEFAULT_PENDING_TIMEOUT};

pub(crate) const VARIABLES: &[Variable] = &[
    var("queue_url", "yes", "the SQS FIFO queue's URL (it ends in `.fifo`)"),
    var("api_keys", "this or its ARN", "accepted `X-API-Key` values, comma-separated"),
    var("api_keys_secret_arn", "this or the value", "a Secrets Manager secret holding them, read at cold start"),
    var("pending_timeout_secs", "no", "how long a coalescing mark waits for its fetch"),
    var("batch_linger_ms", "no", "batch linger; 0 sends each request's message at once (one request per invocation)"),
    var("accept_lease_ms", "no", "how long a killed request may hold its delivery and coalescing mark"),
    var(
        "accept_deadline_ms",
        "no",
        "back-pressure: a request whose Redis work before its send takes longer is answered 503 \
         `deadline_exceeded`, nothing kept (at most half the lease)",
    ),
    var("sqs_endpoint", "no", "a local SQS endpoint instead of AWS (`sluice dev`)"),
];

#[derive(Deserialize, Serialize)]
#[serde(default)]
pub(crate) struct IngestVars {
    pub(crate) queue_url: Option<String>,
    pub(crate) api_keys: Option<String>,
    pub(crate) api_keys_secret_arn: Option<String>,
    #[serde(deserialize_with = "parsed")]
    pub(crate) pending_timeout_secs: u64,
    #[serde(deserialize_with = "parsed")]
    pub(crate) batch_linger_ms: u64,
    #[serde(deserialize_with = "parsed")]
    pub(crate) accept_lease_ms: u64,
    #[serde(deserialize_with = "parsed")]
    pub(crate) accept_deadline_ms: u64,
    pub(crate) sqs_endpoint: Option<String>,
}

impl Default for IngestVars {
    fn default() -> Self {
        // The library's defaults, but for the linger: a Lambda environment
        // serves one request at a time, so a batch would wait for company
        // that never comes.
        Self {
            queue_url: None,
            api_keys: None,
            api_keys_secret_arn: None,
            pending_timeout_secs: DEFAULT_PENDING_TIMEOUT.as_secs(),
            batch_linger_ms: 0,
            accept_lease_ms: DEFAULT_ACCEPT_LEASE.as_millis() as u64,
            accept_deadline_ms: DEFAULT_ACCEPT_DEADLINE.as_millis() as u64,
            sqs_endpoint: None,
        }
    }
}

pub(crate) fn defaults() -> serde_json::Value {
    serde_json::to_value(IngestVars::default()).unwrap_or_default()
}
