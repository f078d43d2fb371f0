//! The shop path through a real `sluice dev` process: a change in its
//! sandbox Cafe24 sends a webhook over HTTP to its ingest; the pipeline
//! fetches and stores the product (one larger than a Step Functions state
//! may carry, too); `sluice trace` shows the journey.

mod support;

use serde_json::{Value, json};
use sluice_domain::{ResourceKind, ResourceRef, ShopEvent, Topic};
use std::time::Duration;
use support::Dev;

/// Creates a product in mall `acme` of the sandbox at `sandbox`; the
/// answer is the change report, with the webhook delivery it caused.
async fn create_product(sandbox: &str, product: Value) -> Value {
    sluice_http::client()
        .post(format!("{sandbox}/sandbox/malls/acme/resources/products"))
        .json(&product)
        .send()
        .await
        .expect("sandbox control plane")
        .json()
        .await
        .expect("change report")
}

#[tokio::test]
async fn a_sandbox_change_flows_from_webhook_to_stored_snapshot() {
    let mut dev = Dev::start(None, &["--sandbox-mall", "acme", "--bucket-capacity", "5", "--bucket-drain", "10"]);
    let sandbox = dev.url("Cafe24 sandbox");
    let change = create_product(&sandbox, json!({"product_name": "sluice mug", "price": "12000"})).await;
    let delivery = &change["webhook"];
    assert_eq!(delivery["status"], 202, "ingest did not accept the webhook: {change}");
    let id = change["id"].as_str().expect("id").to_owned();
    let event = ShopEvent::new(
        "acme",
        Topic(delivery["event_no"].as_u64().expect("event_no") as u32),
        ResourceRef { kind: ResourceKind::Product, id },
        delivery["trace_id"].as_str().expect("trace id"),
    )
    .unwrap();
    let event_id = event.dedup_id().as_str().to_owned();
    let output = dev.trace_once_stored(&event_id).await;
    for stage in ["received", "enqueued", "dequeued", "fetch", "stored"] {
        assert!(output.contains(stage), "trace lacks {stage}:\n{output}");
    }
    let (code, unknown) = dev.trace("s:acme:1:product:nope:x");
    assert_eq!(code, Some(1));
    assert!(unknown.contains("no trace for"), "{unknown}");
    dev.signal("-INT");
    assert!(dev.wait(Duration::from_secs(15)).success());
    assert!(!dev.workdir.join(".sluice/dev.json").exists(), "dev.json left after a clean stop");
}

#[tokio::test]
async fn a_product_larger_than_a_state_may_carry_is_stored() {
    let mut dev = Dev::start(None, &["--sandbox-mall", "acme"]);
    let sandbox = dev.url("Cafe24 sandbox");
    let ingest = dev.url("Ingest");
    // 1,600 variants: about 330 KB as the Admin API serves it, over Step
    // Functions' 256 KiB for a state's input or output.
    let variants: Vec<Value> = (0..1600)
        .map(|i| json!({"variant_code": format!("V{i:07}"), "options": [{"name": "size", "value": "x".repeat(180)}]}))
        .collect();
    let change = create_product(&sandbox, json!({"product_name": "many variants", "variants": variants})).await;
    // The sandbox's own webhook carries the whole resource, over ingest's
    // body limit; a sender's webhook names the product, as this one does.
    assert_eq!(change["webhook"]["status"], 413, "{}", change["webhook"]["status"]);
    let id = change["id"].as_str().expect("id").to_owned();
    let product_no: u64 = id.parse().expect("a product number");
    let response = sluice_http::client()
        .post(&ingest)
        .header("X-API-Key", "sluice-dev")
        .header("X-Trace-ID", "big-product-1")
        .json(&json!({"event_no": 90001, "resource": {"mall_id": "acme", "product_no": product_no}}))
        .send()
        .await
        .expect("webhook");
    assert_eq!(response.status().as_u16(), 202, "{:?}", response.text().await);
    let event =
        ShopEvent::new("acme", Topic(90001), ResourceRef { kind: ResourceKind::Product, id }, "big-product-1").unwrap();
    let event_id = event.dedup_id().as_str().to_owned();
    let output = dev.trace_once_stored(&event_id).await;
    // The stored stage's detail: the body that went into the stream.
    let stored = output.lines().find(|l| l.contains(" stored ")).expect("a stored stage");
    let detail: Value = serde_json::from_str(&stored[stored.find('{').expect("detail")..]).expect("detail JSON");
    let body_bytes = detail["body_bytes"].as_u64().expect("body_bytes");
    assert!(body_bytes > 262_144, "the stored body is {body_bytes} bytes: {stored}");
    assert!(!output.contains("failed"), "stored at the first try:\n{output}");
    dev.signal("-INT");
    assert!(dev.wait(Duration::from_secs(15)).success());
}
