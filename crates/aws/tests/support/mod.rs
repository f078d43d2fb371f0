//! A scripted SQS endpoint for the adapters' batch tests. SQS fails single
//! entries only under its own load (throttling, internal errors), which no
//! local endpoint can be made to do, so the tests stand in this endpoint:
//! it speaks SQS's JSON protocol for SendMessageBatch, answers each call as
//! its script says, and records every entry each call carried, as sent.

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};
use sluice_aws::BatchRetry;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One scripted answer: entry id -> "ok" | "retry" | "sender"; ids absent
/// from it are left out of the answer altogether.
pub(crate) type Answer = Vec<(&'static str, &'static str)>;

#[derive(Debug, Default)]
pub(crate) struct Script {
    answers: Mutex<Vec<Answer>>,
    /// The entries of every call, in order, as the adapter sent them.
    calls: Mutex<Vec<Vec<Value>>>,
}

impl Script {
    /// Every call's entries.
    pub(crate) fn calls(&self) -> Vec<Vec<Value>> {
        self.calls.lock().unwrap().clone()
    }

    /// Every call's entry ids.
    pub(crate) fn ids(&self) -> Vec<Vec<String>> {
        self.calls().iter().map(|c| c.iter().map(|e| e["Id"].as_str().unwrap().to_owned()).collect()).collect()
    }
}

async fn sqs(State(script): State<Arc<Script>>, headers: HeaderMap, body: Bytes) -> (StatusCode, HeaderMap, String) {
    assert_eq!(headers["x-amz-target"], "AmazonSQS.SendMessageBatch");
    let request: Value = serde_json::from_slice(&body).unwrap();
    script.calls.lock().unwrap().push(request["Entries"].as_array().unwrap().clone());
    let answer = script.answers.lock().unwrap().remove(0);
    let (mut successful, mut failed) = (Vec::new(), Vec::new());
    for (id, how) in answer {
        match how {
            "ok" => successful.push(
                json!({"Id": id, "MessageId": format!("m-{id}"), "MD5OfMessageBody": "x", "SequenceNumber": "1"}),
            ),
            "retry" => {
                failed.push(json!({"Id": id, "SenderFault": false, "Code": "InternalError", "Message": "try again"}))
            }
            _ => failed.push(json!({"Id": id, "SenderFault": true, "Code": "InvalidParameterValue", "Message": "no"})),
        }
    }
    let mut headers = HeaderMap::new();
    headers.insert("content-type", "application/x-amz-json-1.0".parse().unwrap());
    (StatusCode::OK, headers, json!({"Successful": successful, "Failed": failed}).to_string())
}

/// Serves `answers` on 127.0.0.1; returns the endpoint's URL and its script.
pub(crate) async fn serve(answers: Vec<Answer>) -> (String, Arc<Script>) {
    let script = Arc::new(Script { answers: Mutex::new(answers), calls: Mutex::default() });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = Router::new().fallback(sqs).with_state(script.clone());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, script)
}

/// Retries quick enough for a test.
pub(crate) fn quick_retry() -> BatchRetry {
    BatchRetry { attempts: 4, first_backoff: Duration::from_millis(1), max_backoff: Duration::from_millis(4) }
}
