//! The failure Lambda's handler, called as the runtime calls it, against a
//! real Redis; and its `bootstrap` through the Runtime API.

use sluice_lambda_harness as harness;

use harness::{Harness, Reply, diagnostic, event, item_plan};
use serde_json::{Value, json};
use sluice_fn_record_failure::handler;

const BOOTSTRAP: &str = env!("CARGO_BIN_EXE_sluice-fn-record-failure");

/// The failure step's input as a Catch builds it for `lambda:invoke`: the
/// item and `{"Error", "Cause"}`, whose Cause is the function's error
/// report as a JSON string.
fn failure(receive_count: u32, delivery: &str) -> (Value, String) {
    let item = item_plan("acme", "7", delivery, receive_count);
    let cause = json!({"errorType": "Sluice.UpstreamUnavailable", "errorMessage": "HTTP 500"}).to_string();
    let payload = json!({"item": item, "failure": {"Error": "Sluice.UpstreamUnavailable", "Cause": cause}});
    (payload, item.trace_id())
}

#[tokio::test]
async fn a_failure_is_traced_with_what_happens_to_the_item_next() {
    let h = Harness::start("fn_failure", &[]).await;
    for (receive_count, delivery, next) in [(1, "r1", "redelivery"), (5, "r2", "dead-letter queue")] {
        let (payload, event_id) = failure(receive_count, delivery);
        assert_eq!(handler(&h.core, event(payload)).await.unwrap(), Value::Null);
        let trace = h.core.traces().read(&event_id).await.unwrap();
        assert_eq!(trace.len(), 1, "{trace:?}");
        assert_eq!(trace[0].stage, "failed");
        let detail = &trace[0].detail;
        assert_eq!(detail["error"], "Sluice.UpstreamUnavailable");
        assert_eq!((detail["next"].as_str(), detail["retryable"].as_bool()), (Some(next), Some(true)), "{detail}");
    }
    h.stop().await;
}

/// A shop event at its last receive is dead-lettered: an `outcome` entry in its
/// mall's snapshot stream tells the drain to record it in PostgreSQL's
/// event log. Earlier failures append nothing; the step run twice for one
/// failure (a Lambda retry) appends once.
#[tokio::test]
async fn a_dead_lettered_shop_event_is_appended_to_its_malls_snapshot_stream_once() {
    let h = Harness::start("fn_failure_dead_lettered", &[]).await;
    let store = h.shop.snapshots();
    let shard = store.shard_of("acme");
    let (early, _) = failure(1, "r5");
    handler(&h.core, event(early)).await.unwrap();
    assert!(store.read(shard, "-", 10).await.unwrap().is_empty(), "a failure that will be redelivered is no outcome");
    let (dead, event_id) = failure(5, "r6");
    handler(&h.core, event(dead.clone())).await.unwrap();
    handler(&h.core, event(dead)).await.unwrap();
    let entries = store.read(shard, "-", 10).await.unwrap();
    assert_eq!(entries.len(), 1, "{entries:?}");
    let fields = &entries[0].fields;
    assert!(entries[0].is_outcome());
    assert_eq!(
        (fields["outcome"].as_str(), fields["event_id"].as_str(), fields["mall_id"].as_str()),
        ("dead-lettered", event_id.as_str(), "acme")
    );
    let detail: Value = serde_json::from_str(&fields["detail"]).unwrap();
    assert_eq!(
        (detail["next"].as_str(), detail["error"].as_str()),
        (Some("dead-letter queue"), Some("Sluice.UpstreamUnavailable"))
    );
    h.stop().await;
}

/// A receive whose outcome was appended before the rename (`parked`, under
/// the key `parked:EVENT:MESSAGE:RECEIVE`), run again after the deploy: the
/// key's prefix is unchanged, so it is still one entry.
#[tokio::test]
async fn a_receive_recorded_as_parked_before_the_rename_is_not_appended_again() {
    let h = Harness::start("fn_failure_renamed", &[]).await;
    let store = h.shop.snapshots();
    let shard = store.shard_of("acme");
    let (payload, event_id) = failure(5, "r7");
    let key = format!("parked:{event_id}:msg-r7:5");
    let old = store.append_outcome("acme", &event_id, "parked", &json!({}), &key).await.unwrap();
    handler(&h.core, event(payload)).await.unwrap();
    let entries = store.read(shard, "-", 10).await.unwrap();
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!((entries[0].id.as_str(), entries[0].fields["outcome"].as_str()), (old.entry_id.as_str(), "parked"));
    h.stop().await;
}

#[tokio::test]
async fn an_input_without_the_failure_is_an_invalid_request() {
    let h = Harness::start("fn_failure_bad_input", &[]).await;
    let (mut payload, _) = failure(1, "r3");
    payload["failure"] = json!({"Cause": "no Error"});
    let report = diagnostic(handler(&h.core, event(payload)).await, "Sluice.InvalidRequest");
    assert!(report.error_message.starts_with("FailureInput: missing field `Error`"), "{report:?}");
    h.stop().await;
}

#[tokio::test]
async fn the_bootstrap_answers_null_through_the_runtime_api() {
    let h = Harness::start("fn_failure_bootstrap", &[]).await;
    let (payload, event_id) = failure(2, "r4");
    let reply = h.invoke_bootstrap(BOOTSTRAP, payload).await;
    assert_eq!(reply, Reply::Response { request_id: "req-0".into(), body: Value::Null });
    assert_eq!(h.stages(&event_id).await, ["failed"]);
    h.stop().await;
}

/// PlanBatch throttled on a message's last receive: the state machine hands
/// over the pipe's message itself, which the step plans as PlanBatch would
/// have, so the event's trace and its dead-lettered outcome say why.
#[tokio::test]
async fn a_message_no_plan_was_made_for_is_traced_and_dead_lettered_on_its_last_receive() {
    let h = Harness::start("fn_failure_unplanned", &[]).await;
    let item = item_plan("acme", "7", "r8", 5);
    let body = serde_json::to_string(item.work.as_ref().unwrap()).unwrap();
    let message = json!({"messageId": item.item_id, "body": body,
        "attributes": {"ApproximateReceiveCount": "5", "MessageGroupId": "acme"}});
    let cause = "PlanBatch was throttled past its retries on the message's last receive";
    let payload = json!({"message": message, "failure": {"Error": "Lambda.TooManyRequestsException", "Cause": cause}});
    assert_eq!(handler(&h.core, event(payload)).await.unwrap(), Value::Null);
    let trace = h.core.traces().read(&item.trace_id()).await.unwrap();
    assert_eq!(trace.len(), 1, "{trace:?}");
    let detail = &trace[0].detail;
    assert_eq!((trace[0].stage.as_str(), detail["next"].as_str()), ("failed", Some("dead-letter queue")));
    assert_eq!(detail["error"], "Lambda.TooManyRequestsException");
    let store = h.shop.snapshots();
    let entries = store.read(store.shard_of("acme"), "-", 10).await.unwrap();
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0].fields["outcome"].as_str(), "dead-lettered");

    let report = diagnostic(handler(&h.core, event(json!({"failure": {"Error": "X"}}))).await, "Sluice.InvalidRequest");
    assert!(report.error_message.contains("no item and no message"), "{report:?}");
    h.stop().await;
}
