//! The store Lambda's handler, called as the runtime calls it, against a
//! real Redis; and its `bootstrap` through the Runtime API.

use sluice_lambda_harness as harness;

use harness::{Harness, Reply, diagnostic, event, event_id, item};
use serde_json::{Value, json};
use sluice_fn_store::handler;

const BOOTSTRAP: &str = env!("CARGO_BIN_EXE_sluice-fn-store");

/// The store step's input as the state machine builds it: the item and
/// the fetch step's reference to the snapshot it left in Redis.
async fn fetched(h: &Harness, delivery: &str) -> Value {
    h.seed_token("acme").await;
    let (id, _) = h.product("acme").await;
    let item = item("acme", &id, delivery);
    let fetch = h.shop.fetch(serde_json::from_value(json!({ "item": item })).unwrap()).await.unwrap();
    json!({ "item": item, "snapshot": fetch.snapshot.unwrap() })
}

#[tokio::test]
async fn a_snapshot_is_stored_once_however_often_the_item_comes_back() {
    let h = Harness::start("fn_store", &["acme"]).await;
    let payload = fetched(&h, "s1").await;
    let first = handler(&h.shop, event(payload.clone())).await.unwrap();
    assert_eq!(first["duplicate"], false, "{first}");
    assert!(first["entry_id"].as_str().is_some_and(|id| id.contains('-')), "a stream entry id: {first}");
    let again = handler(&h.shop, event(payload.clone())).await.unwrap();
    assert_eq!((again["duplicate"].as_bool(), &again["entry_id"]), (Some(true), &first["entry_id"]));
    assert_eq!(h.stages(&event_id(&payload["item"])).await, ["fetch", "stored", "stored"]);
    h.stop().await;
}

#[tokio::test]
async fn an_input_without_a_snapshot_is_an_invalid_request() {
    let h = Harness::start("fn_store_bad_input", &["acme"]).await;
    let payload = json!({"item": item("acme", "1", "s2"), "snapshot": null});
    let report = diagnostic(handler(&h.shop, event(payload)).await, "Sluice.InvalidRequest");
    assert!(report.error_message.starts_with("StoreInput: invalid type: null"), "{report:?}");
    h.stop().await;
}

#[tokio::test]
async fn the_bootstrap_answers_a_store_through_the_runtime_api() {
    let mut h = Harness::start("fn_store_bootstrap", &["acme"]).await;
    let payload = fetched(&h, "s3").await;
    // As the template starts it: store reads no Cafe24 variable or secret.
    h.vars.retain(|name, _| !name.starts_with("SLUICE_CAFE24"));
    let reply = h.invoke_bootstrap(BOOTSTRAP, payload.clone()).await;
    let Reply::Response { body, .. } = reply else { panic!("expected a response, got {reply:?}") };
    assert_eq!(body["duplicate"], false, "{body}");
    // The bootstrap wrote where this process reads: same Redis, same prefix.
    let again = handler(&h.shop, event(payload)).await.unwrap();
    assert_eq!((again["duplicate"].as_bool(), &again["entry_id"]), (Some(true), &body["entry_id"]));
    h.stop().await;
}
