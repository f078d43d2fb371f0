//! The Lambda's service, driven the way the runtime drives it: API Gateway
//! HTTP API events (payload format 2.0, as AWS documents it) turned into
//! `lambda_http::Request`s, answered by the router built from environment
//! variables, with a real Redis and the embedded queue in place of SQS.

use crate::support;

use base64::prelude::{BASE64_STANDARD, Engine};
use lambda_http::tower::{Service, ServiceExt};
use lambda_http::{Context, LambdaEvent};
use serde_json::{Value, json};
use sha2::Digest;
use sluice_config::EnvSource;
use sluice_domain::WorkQueue;
use sluice_domain::queue::ReceiveRequest;
use sluice_fn_ingest::{IngestSettings, build, ingest_config};
use sluice_ingest::Ingest;
use sluice_sqs_emulator::{EmbeddedQueue, MemoryBackend, QueueBackend, QueueConfig};
use sluice_testkit::TestRedis;
use std::collections::HashMap;
use std::time::Duration;
use support::event;

const KEY: &str = "apigw-key-0123456789";
const QUEUE: &str = "sluice-events.fifo";

struct Lambda {
    redis: TestRedis,
    ingest: Ingest<sluice_redis::Connection>,
    queue: EmbeddedQueue<MemoryBackend>,
}

impl Lambda {
    /// The service as `main` builds it, from these variables, over the
    /// embedded queue instead of SQS.
    async fn start(test: &str) -> Self {
        let redis = TestRedis::new(test);
        let vars: HashMap<&str, String> = HashMap::from([
            ("SLUICE_REDIS_URL", redis.url()),
            ("SLUICE_QUEUE_URL", format!("http://127.0.0.1:9324/000000000000/{QUEUE}")),
            ("SLUICE_API_KEYS", format!("old-key-abcdef, {KEY}")),
            ("SLUICE_KEY_PREFIX", redis.keyspace().prefix().to_owned()),
        ]);
        let env = IngestSettings::from_source(&EnvSource::from_pairs(vars)).unwrap();
        let backend = MemoryBackend::new();
        backend.create_queue(QUEUE, &QueueConfig::default()).await.unwrap();
        let queue = EmbeddedQueue::new(backend, QUEUE);
        let ingest = build(ingest_config(&env).await.unwrap(), queue.clone(), redis.conn().await, None).unwrap();
        // As `sluice tokens set acme` would have.
        redis.enrol(&["acme"], &[]).await;
        Self { redis, ingest, queue }
    }

    /// Converts the event as `lambda_http` does and calls the router.
    async fn call(&self, event: &Value) -> (u16, Value) {
        let request = lambda_http::request::from_str(&event.to_string()).unwrap();
        let response = self.ingest.router().oneshot(request).await.unwrap();
        let status = response.status().as_u16();
        let body = axum_body_text(response).await;
        (status, serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body:?}")))
    }

    async fn messages(&self) -> usize {
        let request = ReceiveRequest::new(10, Duration::from_secs(30), Duration::ZERO).unwrap();
        self.queue.receive(request).await.unwrap().len()
    }
}

async fn axum_body_text(response: axum::response::Response) -> String {
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
    String::from_utf8(bytes.to_vec()).unwrap()
}

#[tokio::test]
async fn a_webhook_event_is_answered_202_and_enqueued() {
    let lambda = Lambda::start("apigw_accepted").await;
    let body = r#"{"event_no":90002,"resource":{"mall_id":"acme","event_shop_no":"1","product_no":7}}"#;
    let (status, answer) = lambda.call(&event(body, &[("x-api-key", KEY), ("x-trace-id", "t-7")], false)).await;
    assert_eq!(status, 202, "{answer}");
    assert_eq!(answer, json!({"event_ids": ["s:acme:90002:product:7:t-7"], "status": "enqueued"}));
    assert_eq!(lambda.messages().await, 1);
    // The same delivery again: a duplicate, not a second message.
    let (_, again) = lambda.call(&event(body, &[("x-api-key", KEY), ("x-trace-id", "t-7")], false)).await;
    assert_eq!(again["status"], "duplicate");
    assert_eq!(lambda.messages().await, 0);
}

#[tokio::test]
async fn a_base64_body_is_decoded_before_it_is_read_and_digested() {
    let lambda = Lambda::start("apigw_base64").await;
    let body = r#"{"event_no":90023,"resource":{"mall_id":"acme","order_id":"20260310-0000001"}}"#;
    let encoded = BASE64_STANDARD.encode(body);
    let (status, answer) = lambda.call(&event(&encoded, &[("x-api-key", KEY)], true)).await;
    assert_eq!(status, 202, "{answer}");
    let digest = hex::encode(sha2::Sha256::digest(body.as_bytes()));
    assert_eq!(answer["event_ids"][0], format!("s:acme:90023:order:20260310-0000001:{digest}"));
}

#[tokio::test]
async fn bad_events_get_their_4xx_and_leave_nothing_behind() {
    let lambda = Lambda::start("apigw_bad").await;
    let good = r#"{"event_no":90002,"resource":{"mall_id":"acme","product_no":7}}"#;
    let huge = format!(r#"{{"event_no":90002,"pad":"{}"}}"#, "x".repeat(256 * 1024));
    for (body, headers, status, code) in [
        (good, vec![], 401, "unauthorized"),
        (good, vec![("x-api-key", "old-key-abcde")], 401, "unauthorized"),
        (huge.as_str(), vec![("x-api-key", KEY)], 413, "payload_too_large"),
        ("{", vec![("x-api-key", KEY)], 400, "invalid_json"),
        (r#"{"event_no":1,"resource":{}}"#, vec![("x-api-key", KEY)], 422, "unknown_topic"),
        (r#"{"event_no":90002,"resource":{"mall_id":"acme"}}"#, vec![("x-api-key", KEY)], 400, "invalid_field"),
        (
            r#"{"event_no":90002,"resource":{"mall_id":"acme","product_no":0}}"#,
            vec![("x-api-key", KEY)],
            400,
            "invalid_field",
        ),
        (
            r#"{"event_no":90002,"resource":{"mall_id":"acme","product_no":-7}}"#,
            vec![("x-api-key", KEY)],
            400,
            "invalid_field",
        ),
    ] {
        let (got, answer) = lambda.call(&event(body, &headers, false)).await;
        assert_eq!((got, answer["error"]["code"].as_str()), (status, Some(code)), "{answer}");
    }
    assert_eq!(lambda.messages().await, 0);
    // Only what was there before: acme's enrolment.
    let enrolled = format!("{}{{mall:acme}}:enrolled:cafe24", lambda.redis.keyspace().prefix());
    assert_eq!(lambda.redis.keys().await, vec![enrolled]);
}

/// What the runtime sends back to API Gateway: the router's answer through
/// `lambda_http`'s adapter, serialised as a payload 2.0 response.
#[tokio::test]
async fn the_answer_reaches_api_gateway_as_a_v2_response() {
    let lambda = Lambda::start("apigw_response").await;
    let body = r#"{"event_no":90002,"resource":{"mall_id":"acme","product_no":8}}"#;
    let payload = serde_json::from_value(event(body, &[("x-api-key", KEY), ("x-trace-id", "t-8")], false)).unwrap();
    let mut adapter = lambda_http::Adapter::from(lambda.ingest.router());
    let response = adapter.ready().await.unwrap().call(LambdaEvent::new(payload, Context::default())).await.unwrap();
    let response = serde_json::to_value(&response).unwrap();
    assert_eq!(response["statusCode"], 202, "{response}");
    assert_eq!(response["isBase64Encoded"], false, "{response}");
    assert_eq!(response["headers"]["content-type"], "application/json", "{response}");
    let answer: Value = serde_json::from_str(response["body"].as_str().unwrap()).unwrap();
    assert_eq!(answer, json!({"event_ids": ["s:acme:90002:product:8:t-8"], "status": "enqueued"}));
}

#[tokio::test]
async fn an_unreachable_redis_stops_the_start_naming_the_variable_not_the_password() {
    // Port 1 on loopback: nothing listens there.
    let vars = HashMap::from([
        ("SLUICE_REDIS_URL", "redis://:sekret-pw@127.0.0.1:1".to_owned()),
        ("SLUICE_QUEUE_URL", format!("http://127.0.0.1:9324/000000000000/{QUEUE}")),
        ("SLUICE_API_KEYS", KEY.to_owned()),
    ]);
    let env = IngestSettings::from_source(&EnvSource::from_pairs(vars)).unwrap();
    let err = tokio::time::timeout(Duration::from_secs(10), sluice_fn_ingest::start(&env))
        .await
        .expect("gives up in time")
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("cannot connect to Redis (SLUICE_REDIS_URL): Redis at redis://127.0.0.1:1: unreachable"),
        "{err}"
    );
    assert!(!err.contains("sekret-pw"), "{err}");
}
