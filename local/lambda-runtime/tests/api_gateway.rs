//! The real ingest binary behind the local HTTP API: HTTP requests become
//! payload 2.0 events (base64 bodies, lower-cased headers), its v2
//! responses become HTTP, and what API Gateway answers itself (an unknown
//! route) it answers here. The webhook it accepts reaches the queue
//! through the local SQS endpoint, the API keys come from the local
//! Secrets Manager.

use crate::support;

use serde_json::{Value, json};
use sluice_lambda_runtime::{Endpoints, Template, serve_api_gateway};
use sluice_sqs_emulator::sqs_api::{self, SqsApi};
use sluice_sqs_emulator::{MemoryBackend, QueueBackend, QueueConfig};
use sluice_testkit::TestRedis;
use support::{bindings, start};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

const QUEUE: &str = "sluice-events.fifo";

#[tokio::test]
async fn http_requests_reach_the_ingest_binary_as_api_gateway_events() {
    let redis = TestRedis::new("local_apigw");
    redis.enrol(&["acme"], &[]).await;
    let stop = CancellationToken::new();
    let backend = MemoryBackend::new();
    backend.create_queue(QUEUE, &QueueConfig::default()).await.unwrap();
    let sqs_listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let sqs_url = format!("http://{}", sqs_listener.local_addr().unwrap());
    let api = SqsApi::new(backend, sqs_url.clone());
    let queue_url = api.queue_url(QUEUE);
    tokio::spawn(sqs_api::serve(sqs_listener, api, stop.clone().cancelled_owned()));
    let bindings = bindings(&redis, &redis.url())
        .resource("EventsQueue", queue_url.clone())
        .with_endpoints(Endpoints { sqs: Some(sqs_url.clone()), ..Endpoints::default() });
    let lambda = start(Template::bundled().unwrap(), bindings, 2).await;
    let ingest = lambda.function("sluice-fn-ingest").unwrap().clone();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(serve_api_gateway(listener, ingest, stop.clone().cancelled_owned()));
    let http = sluice_http::client();

    let webhook = r#"{"event_no":90002,"resource":{"mall_id":"acme","product_no":7}}"#;
    let post = |key: &'static str| {
        http.post(format!("{url}/webhooks/cafe24"))
            .header("X-API-Key", key)
            .header("X-Trace-ID", "t-7")
            .header("content-type", "application/json")
            .body(webhook)
    };
    let accepted = post("test-key").send().await.unwrap();
    assert_eq!(accepted.status(), 202);
    assert_eq!(accepted.headers()["content-type"], "application/json");
    assert!(accepted.headers().contains_key("apigw-requestid"));
    let body: Value = accepted.json().await.unwrap();
    assert_eq!(body, json!({"event_ids": ["s:acme:90002:product:7:t-7"], "status": "enqueued"}));
    let sqs = sluice_aws::sqs_client(&sluice_aws::SqsEndpoint::Local(sqs_url)).await;
    let queue = sluice_aws::SqsQueue::new(sqs, queue_url);
    assert_eq!(sluice_domain::Queue::attributes(&queue).await.unwrap().visible, 1, "enqueued through SQS");

    let refused = post("wrong-key").send().await.unwrap();
    assert_eq!(refused.status(), 401);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "unauthorized", "{body}");

    let health = http.get(format!("{url}/health")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    // Off the template's routes, API Gateway answers itself.
    let unknown = http.get(format!("{url}/webhooks/cafe24")).send().await.unwrap();
    assert_eq!(unknown.status(), 404);
    assert_eq!(unknown.json::<Value>().await.unwrap(), json!({"message": "Not Found"}));

    stop.cancel();
    lambda.stop().await;
}
