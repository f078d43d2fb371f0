//! The token Lambda's handler, called as the runtime calls it, against a
//! real Redis and the sandbox Cafe24's token endpoint; and its `bootstrap`
//! through the Runtime API.

use sluice_lambda_harness as harness;

use harness::{Harness, Reply, diagnostic, event, item};
use serde_json::json;
use sluice_fn_ensure_token::handler;
use sluice_pipeline::fingerprint;

const BOOTSTRAP: &str = env!("CARGO_BIN_EXE_sluice-fn-ensure-token");

#[tokio::test]
async fn a_usable_token_lets_the_item_go_on_without_a_refresh() {
    let h = Harness::start("fn_token_usable", &["acme"]).await;
    h.seed_token("acme").await;
    let answer = handler(&h.shop, event(json!({"item": item("acme", "1", "t1"), "stale_token": null}))).await;
    assert_eq!(answer.unwrap(), json!({"wait_seconds": 0, "held": false}));
    assert_eq!(h.sandbox.refresh_count("acme").unwrap(), 0);
    h.stop().await;
}

#[tokio::test]
async fn a_rejected_token_is_refreshed_with_the_apps_credentials_from_the_environment() {
    let h = Harness::start("fn_token_refresh", &["acme"]).await;
    let rejected = h.seed_token("acme").await;
    let payload = json!({"item": item("acme", "1", "t2"), "stale_token": fingerprint(&rejected)});
    assert_eq!(handler(&h.shop, event(payload.clone())).await.unwrap(), json!({"wait_seconds": 0, "held": false}));
    // The sandbox only refreshes for its app's client id and secret, which
    // reached the client through SLUICE_CAFE24_CLIENT_ID / _SECRET.
    assert_eq!(h.sandbox.refresh_count("acme").unwrap(), 1);
    // The stored token is no longer the rejected one: asking again with the
    // same stale fingerprint does not refresh twice.
    assert_eq!(handler(&h.shop, event(payload)).await.unwrap(), json!({"wait_seconds": 0, "held": false}));
    assert_eq!(h.sandbox.refresh_count("acme").unwrap(), 1);
    h.stop().await;
}

#[tokio::test]
async fn an_input_that_is_not_an_item_is_an_invalid_request() {
    let h = Harness::start("fn_token_bad_input", &["acme"]).await;
    let report = diagnostic(handler(&h.shop, event(json!({"item": "acme"}))).await, "Sluice.InvalidRequest");
    assert!(report.error_message.starts_with("TokenInput: invalid type: string \"acme\""), "{report:?}");
    h.stop().await;
}

#[tokio::test]
async fn a_mall_without_a_token_is_parked_and_its_event_held() {
    // Not failed toward the dead-letter queue: `sluice tokens set` releases it.
    let h = Harness::start("fn_token_missing", &["new-mall"]).await;
    let answer = handler(&h.shop, event(json!({"item": item("new-mall", "1", "t3")}))).await.unwrap();
    assert_eq!(answer, json!({"wait_seconds": 0, "held": true}));
    h.stop().await;
}

#[tokio::test]
async fn the_bootstrap_reports_bad_input_to_the_runtime_api_as_an_invalid_request() {
    let h = Harness::start("fn_token_bootstrap", &["acme"]).await;
    let reply = h.invoke_bootstrap(BOOTSTRAP, json!({"stale_token": null})).await;
    let Reply::Error { request_id, body, raw } = reply else { panic!("expected an error report, got {reply:?}") };
    assert_eq!(request_id, "req-0");
    assert_eq!(body, json!({"errorType": "Sluice.InvalidRequest", "errorMessage": "TokenInput: missing field `item`"}));
    // Exactly these two fields, in this order: the document Step Functions
    // passes on as the Cause (the local interpreter builds the same).
    assert_eq!(raw, r#"{"errorType":"Sluice.InvalidRequest","errorMessage":"TokenInput: missing field `item`"}"#);
    h.stop().await;
}

#[test]
fn the_bootstrap_refuses_to_start_without_its_configuration() {
    let vars = [("SLUICE_REDIS_URL", "redis://127.0.0.1:6379"), ("SLUICE_CAFE24_CLIENT_ID", "app")];
    harness::assert_refuses_to_start(BOOTSTRAP, &vars, "SLUICE_CAFE24_CLIENT_SECRET is not set");
}
