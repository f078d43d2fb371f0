//! API Gateway HTTP API events, as AWS sends them to the ingest Lambda.

use serde_json::{Value, json};
use sluice_domain::{CatchUpRequest, CatchUpRequests};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

/// An API Gateway HTTP API (payload 2.0) event for `POST /webhooks/cafe24`.
pub(crate) fn event(body: &str, headers: &[(&str, &str)], base64: bool) -> Value {
    let mut all: HashMap<String, String> = [
        ("content-type", "application/json"),
        ("host", "abc123.execute-api.ap-northeast-2.amazonaws.com"),
        ("user-agent", "Cafe24-Webhook"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    all.extend(headers.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
    json!({
        "version": "2.0",
        "routeKey": "POST /webhooks/cafe24",
        "rawPath": "/webhooks/cafe24",
        "rawQueryString": "",
        "headers": all,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "abc123",
            "domainName": "abc123.execute-api.ap-northeast-2.amazonaws.com",
            "domainPrefix": "abc123",
            "http": {
                "method": "POST",
                "path": "/webhooks/cafe24",
                "protocol": "HTTP/1.1",
                "sourceIp": "203.0.113.7",
                "userAgent": "Cafe24-Webhook"
            },
            "requestId": "JKJaXmPLvHcESHA=",
            "routeKey": "POST /webhooks/cafe24",
            "stage": "$default",
            "time": "10/Mar/2026:05:30:00 +0000",
            "timeEpoch": 1_773_120_600_000u64
        },
        "body": body,
        "isBase64Encoded": base64
    })
}

/// The catch-up queue's stand-in: each catch-up request, recorded.
#[derive(Debug, Default)]
pub(crate) struct Recorded(pub(crate) Mutex<Vec<CatchUpRequest>>);

impl CatchUpRequests for Recorded {
    fn request(&self, request: &CatchUpRequest, _delay: Duration) -> sluice_domain::catch_up::Pending<'_> {
        self.0.lock().unwrap().push(request.clone());
        Box::pin(async { Ok(()) })
    }
}
