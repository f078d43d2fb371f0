//! The fetch Lambda's handler, called as the runtime calls it, against a
//! real Redis and the sandbox Cafe24; and its `bootstrap` through the
//! Runtime API.

use sluice_lambda_harness as harness;

use harness::{Harness, Reply, diagnostic, event, event_id, item};
use serde_json::{Value, json};
use sluice_fn_fetch::handler;
use sluice_sandbox::FaultConfig;

const BOOTSTRAP: &str = env!("CARGO_BIN_EXE_sluice-fn-fetch");

#[tokio::test]
async fn a_fetch_answers_a_reference_to_the_snapshot_it_left_in_redis() {
    let h = Harness::start("fn_fetch_found", &["acme"]).await;
    h.seed_token("acme").await;
    let (id, version) = h.product("acme").await;
    let item = item("acme", &id, "f1");

    let answer = handler(&h.shop, event(json!({ "item": item }))).await.unwrap();
    assert_eq!(answer["outcome"], "fetched", "{answer}");
    assert_eq!(answer["wait_seconds"], 0);
    assert_eq!(answer["token"], Value::Null, "every field is present, null when empty");
    // A key and a summary, never the body (Step Functions' 256 KiB limit).
    let snapshot = &answer["snapshot"];
    assert_eq!((snapshot["status"].as_str(), snapshot["version"].as_u64()), (Some("found"), Some(version)));
    assert_eq!(snapshot["answers"], 1);
    assert!(snapshot.get("body").is_none(), "{answer}");
    let key = snapshot["key"].as_str().expect("the snapshot's key");
    assert!(key.ends_with(&format!(":fetched:{}", event_id(&item))), "{key}");
    let mut conn = h.redis.conn().await;
    let fields: std::collections::HashMap<String, String> =
        redis::cmd("HGETALL").arg(key).query_async(&mut conn).await.unwrap();
    let left = sluice_redis::StoredEntry { id: String::new(), fields };
    let snapshot = left.snapshot().expect("the snapshot the store step appends");
    assert_eq!((&*snapshot.mall_id, &*snapshot.id), ("acme", id.as_str()));
    assert_eq!(h.sandbox.counters().calls, 1);
    h.stop().await;
}

#[tokio::test]
async fn an_input_without_an_item_is_an_invalid_request() {
    let h = Harness::start("fn_fetch_bad_input", &["acme"]).await;
    let report = diagnostic(handler(&h.shop, event(json!({"itme": {}}))).await, "Sluice.InvalidRequest");
    assert_eq!(report.error_message, "FetchInput: missing field `item`");
    assert_eq!(h.sandbox.counters().calls, 0);
    h.stop().await;
}

/// A harness whose sandbox mall `acme` has a token and a product (its id
/// is returned) but answers every call with a 500.
async fn with_a_failing_upstream(test: &str) -> (Harness, String) {
    let h = Harness::start(test, &["acme"]).await;
    h.seed_token("acme").await;
    let (id, _) = h.product("acme").await;
    h.sandbox.set_faults(FaultConfig { server_error_rate: 1.0, ..FaultConfig::default() }).unwrap();
    (h, id)
}

#[tokio::test]
async fn an_upstream_5xx_is_reported_as_upstream_unavailable() {
    let (h, id) = with_a_failing_upstream("fn_fetch_5xx").await;

    let report = diagnostic(
        handler(&h.shop, event(json!({ "item": item("acme", &id, "f2") }))).await,
        "Sluice.UpstreamUnavailable",
    );
    assert!(report.error_message.contains("500"), "the cause says what the upstream answered: {report:?}");
    assert_eq!(h.sandbox.counters().calls, 1, "one call; the state machine's Retry backs off");
    h.stop().await;
}

#[tokio::test]
async fn the_bootstrap_reports_an_upstream_5xx_to_the_runtime_api_by_its_kind_name() {
    let (h, id) = with_a_failing_upstream("fn_fetch_bootstrap").await;

    let reply = h.invoke_bootstrap(BOOTSTRAP, json!({ "item": item("acme", &id, "f3") })).await;
    let Reply::Error { request_id, body, .. } = reply else { panic!("expected an error report, got {reply:?}") };
    assert_eq!(request_id, "req-0");
    // The body Lambda hands to Step Functions: its errorType becomes the
    // task's Error, which the Fetch state's Retry matches.
    assert_eq!(body["errorType"], "Sluice.UpstreamUnavailable", "{body}");
    assert!(body["errorMessage"].as_str().is_some_and(|m| m.contains("500")), "{body}");
    h.stop().await;
}

#[test]
fn the_bootstrap_refuses_to_start_without_its_configuration() {
    harness::assert_refuses_to_start(BOOTSTRAP, &[("SLUICE_CAFE24_CLIENT_ID", "app")], "SLUICE_REDIS_URL is not set");
}
