//! Any bytes as an SQS JSON protocol request (the action from the first
//! byte), through the endpoint's router over an in-memory queue: every
//! answer is 200 or an SQS JSON error, never a panic or a 5xx.
#![no_main]

use axum::body::Body;
use axum::http::Request;
use libfuzzer_sys::fuzz_target;
use sluice_sqs_emulator::MemoryBackend;
use sluice_sqs_emulator::sqs_api::{SqsApi, router};
use tower::ServiceExt;

const ACTIONS: [&str; 12] = [
    "CreateQueue",
    "GetQueueUrl",
    "ListQueues",
    "DeleteQueue",
    "PurgeQueue",
    "GetQueueAttributes",
    "SendMessage",
    "SendMessageBatch",
    "ReceiveMessage",
    "DeleteMessage",
    "ChangeMessageVisibility",
    "StartMessageMoveTask",
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else { return };
    let action = ACTIONS[usize::from(pick) % ACTIONS.len()];
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let app = router(SqsApi::new(MemoryBackend::new(), "http://127.0.0.1:9324"));
        let request = Request::post("/")
            .header("x-amz-target", format!("AmazonSQS.{action}"))
            .header("content-type", "application/x-amz-json-1.0")
            .body(Body::from(body.to_vec()))
            .unwrap();
        let response = app.oneshot(request).await.unwrap();
        let status = response.status().as_u16();
        assert!(status == 200 || (400..500).contains(&status), "{action}: status {status}");
    });
});
