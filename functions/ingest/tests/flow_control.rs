//! Flow control per mall in the Lambda: with `SLUICE_CATCH_UP_QUEUE_URL`
//! set, the service `start` builds defers a mall's webhooks once it has
//! `SLUICE_FLOW_MAX_QUEUED` messages in the queue, and asks for a drain
//! run; without it, every webhook is a message. Flow control per sheet
//! needs no queue: a sheet with `SLUICE_SHEET_MAX_QUEUED` rows in the
//! queue has its next rows held in its overflow.

use crate::support;

use lambda_http::tower::ServiceExt;
use serde_json::Value;
use sluice_config::EnvSource;
use sluice_domain::CatchUpRequests;
use sluice_fn_ingest::{IngestSettings, build, ingest_config};
use sluice_sqs_emulator::{EmbeddedQueue, MemoryBackend, QueueBackend, QueueConfig};
use sluice_testkit::TestRedis;
use std::sync::Arc;
use support::{Recorded, event};

const KEY: &str = "apigw-key-0123456789";
const QUEUE: &str = "sluice-events.fifo";

async fn statuses(flow_vars: &[(&'static str, &str)], test: &str) -> (Vec<String>, usize) {
    let redis = TestRedis::new(test);
    redis.enrol(&["acme"], &[]).await;
    let mut vars = vec![
        ("SLUICE_REDIS_URL", redis.url()),
        ("SLUICE_QUEUE_URL", format!("http://127.0.0.1:9324/000000000000/{QUEUE}")),
        ("SLUICE_API_KEYS", KEY.to_owned()),
        ("SLUICE_KEY_PREFIX", redis.keyspace().prefix().to_owned()),
    ];
    vars.extend(flow_vars.iter().map(|(k, v)| (*k, (*v).to_owned())));
    let env = IngestSettings::from_source(&EnvSource::from_pairs(vars)).unwrap();
    let backend = MemoryBackend::new();
    backend.create_queue(QUEUE, &QueueConfig::default()).await.unwrap();
    let recorded = Arc::new(Recorded::default());
    // What `start` passes: catch-up requests only when the queue is set.
    let drain = env.flow.queue.as_ref().map(|_| recorded.clone() as Arc<dyn CatchUpRequests>);
    let ingest =
        build(ingest_config(&env).await.unwrap(), EmbeddedQueue::new(backend, QUEUE), redis.conn().await, drain)
            .unwrap();
    let mut answers = Vec::new();
    for product in 1..=3 {
        let body = format!(r#"{{"event_no":90002,"resource":{{"mall_id":"acme","product_no":{product}}}}}"#);
        let trace = format!("t-{product}");
        let request = lambda_http::request::from_str(
            &event(&body, &[("x-api-key", KEY), ("x-trace-id", trace.as_str())], false).to_string(),
        )
        .unwrap();
        let response = ingest.router().oneshot(request).await.unwrap();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
        let answer: Value = serde_json::from_slice(&bytes).unwrap();
        answers.push(answer["status"].as_str().unwrap_or_default().to_owned());
    }
    let requests = recorded.0.lock().unwrap().len();
    (answers, requests)
}

#[tokio::test]
async fn a_mall_past_the_threshold_is_deferred_and_one_catch_up_run_asked_for() {
    let vars = [
        ("SLUICE_CATCH_UP_QUEUE_URL", "http://127.0.0.1:9324/000000000000/sluice-mall-drain"),
        ("SLUICE_FLOW_MAX_QUEUED", "1"),
    ];
    let (answers, requests) = statuses(&vars, "fn_ingest_flow_on").await;
    assert_eq!(answers, ["enqueued", "deferred", "deferred"]);
    assert_eq!(requests, 1, "one chain per mall");
}

#[tokio::test]
async fn without_the_catch_up_queue_every_webhook_is_a_message() {
    let (answers, requests) = statuses(&[("SLUICE_FLOW_MAX_QUEUED", "1")], "fn_ingest_flow_off").await;
    assert_eq!(answers, ["enqueued", "enqueued", "enqueued"]);
    assert_eq!(requests, 0);
}

#[tokio::test]
async fn a_sheet_past_its_threshold_has_its_rows_held() {
    let redis = TestRedis::new("fn_ingest_sheet_flow");
    redis.enrol(&[], &["c"]).await;
    let vars = vec![
        ("SLUICE_REDIS_URL", redis.url()),
        ("SLUICE_QUEUE_URL", format!("http://127.0.0.1:9324/000000000000/{QUEUE}")),
        // Rows need a key given the rows route (a plain list is webhook keys).
        ("SLUICE_API_KEYS", sluice_ingest::any_route_document(KEY)),
        ("SLUICE_KEY_PREFIX", redis.keyspace().prefix().to_owned()),
        ("SLUICE_SHEET_MAX_QUEUED", "2".to_owned()),
    ];
    let env = IngestSettings::from_source(&EnvSource::from_pairs(vars)).unwrap();
    let backend = MemoryBackend::new();
    backend.create_queue(QUEUE, &QueueConfig::default()).await.unwrap();
    let queue = EmbeddedQueue::new(backend, QUEUE);
    let ingest = build(ingest_config(&env).await.unwrap(), queue, redis.conn().await, None).unwrap();
    let mut answers = Vec::new();
    for row in 1..=3 {
        let body = format!(
            r#"{{"credential_id":"c","spreadsheet_id":"doc","sheet_id":0,"submission_id":"s{row}","row_id":"r{row}","values":[{row}]}}"#
        );
        let mut event = event(&body, &[("x-api-key", KEY)], false);
        event["rawPath"] = "/sheets/rows".into();
        event["requestContext"]["http"]["path"] = "/sheets/rows".into();
        let request = lambda_http::request::from_str(&event.to_string()).unwrap();
        let response = ingest.router().oneshot(request).await.unwrap();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
        let answer: Value = serde_json::from_slice(&bytes).unwrap();
        answers.push(answer["status"].as_str().unwrap_or_default().to_owned());
    }
    assert_eq!(answers, ["enqueued", "enqueued", "deferred"]);
}
