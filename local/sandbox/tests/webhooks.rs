//! Changes in the sandbox reach a real axum receiver as Cafe24 webhooks.

use axum::Router;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use serde_json::{Map, Value, json};
use sluice_cafe24::{Secret, WebhookBody, topic};
use sluice_domain::ResourceKind;
use sluice_sandbox::Cafe24Sandbox;
use sluice_sandbox::cafe24::{SandboxConfig, WebhookTarget};
use std::collections::HashSet;
use std::time::Duration;
use tokio::sync::mpsc;

const MALL: &str = "acme";
const KEY: &str = "receiver-api-key";

#[derive(Debug)]
struct Received {
    api_key: Option<String>,
    trace_id: Option<String>,
    body: Value,
}

/// A receiver answering `status` to every POST, and what it received.
async fn receiver(status: StatusCode) -> (String, mpsc::UnboundedReceiver<Received>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let app = Router::new().route(
        "/webhooks/cafe24",
        post(move |headers: HeaderMap, body: axum::body::Bytes| {
            let tx = tx.clone();
            async move {
                let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
                let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let _ = tx.send(Received { api_key: header("x-api-key"), trace_id: header("x-trace-id"), body });
                status
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/webhooks/cafe24", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, rx)
}

async fn sandbox_to(url: String) -> Cafe24Sandbox {
    let target = WebhookTarget { url, api_key: Secret::new(KEY) };
    Cafe24Sandbox::start(SandboxConfig { webhook: Some(target), ..SandboxConfig::with_malls([MALL]) }).await.unwrap()
}

fn fields(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

#[tokio::test]
async fn every_change_sends_cafe24s_webhook_with_key_and_a_unique_trace_id() {
    tokio::time::timeout(Duration::from_secs(20), async {
        let (url, mut inbox) = receiver(StatusCode::ACCEPTED).await;
        let sandbox = sandbox_to(url).await;
        let created =
            sandbox.create(MALL, ResourceKind::Product, fields(json!({"product_name": "Tea"}))).await.unwrap();
        let updated =
            sandbox.update(MALL, ResourceKind::Product, &created.id, fields(json!({"price": "9"}))).await.unwrap();
        let deleted = sandbox.delete(MALL, ResourceKind::Product, &created.id).await.unwrap();
        let order = sandbox.create(MALL, ResourceKind::Order, Map::new()).await.unwrap();
        let member = sandbox.create(MALL, ResourceKind::Customer, fields(json!({"member_id": "kim"}))).await.unwrap();
        sandbox.update(MALL, ResourceKind::Customer, "kim", fields(json!({"name": "Kim"}))).await.unwrap();

        let reports = [&created, &updated, &deleted, &order, &member];
        for report in reports {
            let delivery = report.webhook.as_ref().expect("a target is configured");
            assert_eq!(delivery.status, Some(202));
            assert!(delivery.delivered());
        }
        let mut got = Vec::new();
        for _ in 0..6 {
            got.push(inbox.recv().await.expect("delivery"));
        }
        let events: Vec<u64> = got.iter().map(|r| r.body["event_no"].as_u64().unwrap()).collect();
        assert_eq!(events, [90001, 90002, 90003, 90023, 90032, 90080]);
        assert!(got.iter().all(|r| r.api_key.as_deref() == Some(KEY)));
        let traces: HashSet<_> = got.iter().map(|r| r.trace_id.clone().expect("X-Trace-ID")).collect();
        assert_eq!(traces.len(), 6, "trace ids must be unique per delivery");
        assert_eq!(got[0].trace_id.as_deref(), Some(created.webhook.as_ref().unwrap().trace_id.as_str()));

        let product_no: u64 = created.id.parse().unwrap();
        assert_eq!(got[0].body["resource"]["product_no"], product_no);
        assert_eq!(got[0].body["resource"]["mall_id"], MALL);
        assert_eq!(got[0].body["resource"]["product_name"], "Tea");
        assert_eq!(got[1].body["resource"]["price"], "9");
        assert_eq!(
            got[2].body,
            json!({"event_no": 90003, "resource": {"mall_id": MALL, "event_shop_no": "1", "product_no": product_no}})
        );
        assert_eq!(got[3].body["resource"]["order_id"], order.id.as_str());

        // The ingest's view of the same body.
        let body: WebhookBody = serde_json::from_value(got[4].body.clone()).unwrap();
        let t = topic(body.event_no).unwrap();
        assert_eq!((body.mall_id().unwrap(), body.resource_id(t).unwrap().as_str()), (MALL, "kim"));
        assert_eq!(t.kind, ResourceKind::Customer);

        // A resend is a redelivery: same trace id, same body.
        let again = sandbox.resend(created.webhook.as_ref().unwrap()).await.unwrap();
        let redelivered = inbox.recv().await.unwrap();
        assert_eq!(redelivered.trace_id.as_deref(), Some(again.trace_id.as_str()));
        assert_eq!(again.trace_id, created.webhook.as_ref().unwrap().trace_id);
        assert_eq!(redelivered.body, got[0].body);
        let counters = sandbox.counters();
        assert_eq!((counters.webhooks_sent, counters.webhooks_failed), (7, 0));
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn the_receivers_answer_is_reported_even_when_it_fails() {
    tokio::time::timeout(Duration::from_secs(20), async {
        let (url, mut inbox) = receiver(StatusCode::UNAUTHORIZED).await;
        let sandbox = sandbox_to(url).await;
        let report = sandbox.create(MALL, ResourceKind::Product, Map::new()).await.unwrap();
        let delivery = report.webhook.unwrap();
        assert_eq!(delivery.status, Some(401));
        assert!(!delivery.delivered());
        assert!(inbox.recv().await.is_some());

        let nobody = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            format!("http://{}/webhooks/cafe24", listener.local_addr().unwrap())
        };
        sandbox.set_webhook_target(Some(WebhookTarget { url: nobody, api_key: Secret::new(KEY) }));
        let delivery = sandbox.create(MALL, ResourceKind::Product, Map::new()).await.unwrap().webhook.unwrap();
        assert_eq!(delivery.status, None);
        let error = delivery.error.expect("why it failed");
        assert!(!error.contains(KEY), "{error}");
        assert_eq!(sandbox.counters().webhooks_failed, 2);

        sandbox.set_webhook_target(None);
        assert!(sandbox.create(MALL, ResourceKind::Product, Map::new()).await.unwrap().webhook.is_none());
    })
    .await
    .unwrap();
}
