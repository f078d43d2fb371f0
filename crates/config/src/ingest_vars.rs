//! The ingest function's variables: the FIFO queue it sends to, the API
//! keys it accepts, and its timings.
//!
//! Ingest's other bound, `max_accepting` (webhooks accepted at once), is
//! no variable: an execution environment behind API Gateway serves one
//! request at a time, so it could never bite; the function's concurrency
//! is that bound in AWS, and `accept_deadline_ms` answers a slow Redis.

use crate::variables::part;
use sluice_ingest::config::{DEFAULT_ACCEPT_DEADLINE, DEFAULT_ACCEPT_LEASE, DEFAULT_PENDING_TIMEOUT};

part! {
    pub(crate) struct IngestVars {
        pub(crate) queue_url: Option<String> = None, "yes", "the SQS FIFO queue's URL (it ends in `.fifo`)";
        pub(crate) api_keys: Option<String> = None, "this or its ARN", "accepted `X-API-Key` values, comma-separated";
        pub(crate) api_keys_secret_arn: Option<String> = None, "this or the value",
            "a Secrets Manager secret holding them, read at cold start";
        pub(crate) pending_timeout_secs: u64 = DEFAULT_PENDING_TIMEOUT.as_secs(), "no",
            "how long a coalescing mark waits for its fetch";
        pub(crate) batch_linger_ms: u64 = 0, "no",
            "batch linger; 0 sends each request's message at once (one request per invocation)";
        pub(crate) accept_lease_ms: u64 = DEFAULT_ACCEPT_LEASE.as_millis() as u64, "no",
            "how long a killed request may hold its delivery and coalescing mark";
        pub(crate) accept_deadline_ms: u64 = DEFAULT_ACCEPT_DEADLINE.as_millis() as u64, "no",
            "back-pressure: a request whose Redis work before its send takes longer is answered 503 \
             `deadline_exceeded`, nothing kept (at most half the lease)";
        pub(crate) sqs_endpoint: Option<String> = None, "no", "a local SQS endpoint instead of AWS (`sluice dev`)";
    }
}
