//! The shop path through a real `sluice dev` process: a change in its
//! sandbox Cafe24 sends a webhook over HTTP to its ingest; the pipeline
//! fetches and stores the product; `sluice trace` shows the journey.

mod support;

use serde_json::{Value, json};
use sluice_domain::{ResourceKind, ResourceRef, ShopEvent, Topic};
use std::process::Command;
use std::time::{Duration, Instant};
use support::Dev;

fn trace(dev: &Dev, event_id: &str) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["trace", event_id])
        .current_dir(&dev.workdir)
        .env_remove("SLUICE_REDIS_URL")
        .output()
        .expect("run sluice trace");
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
}

#[tokio::test]
async fn a_sandbox_change_flows_from_webhook_to_stored_snapshot() {
    let mut dev = Dev::start(None, &["--sandbox-mall", "acme", "--bucket-capacity", "5", "--bucket-drain", "10"]);
    let sandbox = dev.url("Cafe24 sandbox");
    let http = reqwest::Client::new();
    let change: Value = http
        .post(format!("{sandbox}/sandbox/malls/acme/resources/products"))
        .json(&json!({"product_name": "sluice mug", "price": "12000"}))
        .send()
        .await
        .expect("sandbox control plane")
        .json()
        .await
        .expect("change report");
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
    let deadline = Instant::now() + Duration::from_secs(30);
    let output = loop {
        let (code, output) = trace(&dev, &event_id);
        if code == Some(0) && output.contains("now: stored") {
            break output;
        }
        assert!(Instant::now() < deadline, "event not stored in 30 s; last trace:\n{output}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    for stage in ["received", "enqueued", "dequeued", "fetch", "stored"] {
        assert!(output.contains(stage), "trace lacks {stage}:\n{output}");
    }
    let (code, unknown) = trace(&dev, "s:acme:1:product:nope:x");
    assert_eq!(code, Some(1));
    assert!(unknown.contains("no trace for"), "{unknown}");
    dev.signal("-INT");
    assert!(dev.wait(Duration::from_secs(15)).success());
    assert!(!dev.workdir.join(".sluice/dev.json").exists(), "dev.json left after a clean stop");
}
