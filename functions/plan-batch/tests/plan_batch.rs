//! The plan Lambda's handler, called as the runtime calls it, against a
//! real Redis; and its `bootstrap` through the Runtime API.

use sluice_lambda_harness as harness;

use harness::{Harness, Reply, diagnostic, event, event_id, item};
use serde_json::{Value, json};
use sluice_fn_plan_batch::handler;

const BOOTSTRAP: &str = env!("CARGO_BIN_EXE_sluice-fn-plan-batch");

/// One SQS message as EventBridge Pipes hands it on (the fields the
/// pipeline reads).
fn message(id: &str, group: &str, body: &str, receive_count: u32) -> Value {
    json!({
        "messageId": id,
        "receiptHandle": format!("rh-{id}"),
        "body": body,
        "attributes": {
            "ApproximateReceiveCount": receive_count.to_string(),
            "MessageGroupId": group,
            "MessageDeduplicationId": format!("dd-{id}"),
            "SentTimestamp": "1773120600000"
        }
    })
}

/// A batch of two groups (one message of which is not a work item), as
/// the state machine passes it: `{"messages.$": "$"}`.
fn batch() -> (Value, Value, Value) {
    let (a1, b1, a2) = (item("a", "1", "p1"), item("b", "1", "p2"), item("a", "2", "p3"));
    let body = |i: &Value| i["work"].to_string();
    let payload = json!({"messages": [
        message("m1", "gs:a:90002", &body(&a1), 1),
        message("m2", "gs:b:90002", &body(&b1), 1),
        message("m3", "gs:a:90002", &body(&a2), 3),
        message("m4", "gs:a:90002", "not json", 1),
    ]});
    (payload, a1, a2)
}

#[tokio::test]
async fn a_batch_is_planned_as_fifo_groups_and_each_item_is_traced() {
    let h = Harness::start("fn_plan", &[]).await;
    let (payload, a1, a2) = batch();
    let plan = handler(&h.core, event(payload)).await.unwrap();

    assert_eq!(plan["max_concurrency"], 10);
    let groups = plan["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 2);
    let a = &groups[0];
    assert_eq!(
        (a["group"].as_str(), a["count"].as_u64(), a["position"].as_u64()),
        (Some("gs:a:90002"), Some(3), Some(0))
    );
    let ids: Vec<&str> = a["items"].as_array().unwrap().iter().map(|i| i["item_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["m1", "m3", "m4"]);
    assert_eq!(a["items"][1]["receive_count"], 3);
    assert_eq!(a["items"][2]["kind"], "invalid");
    assert_eq!(a["remaining"][1], json!([{"itemIdentifier": "m3"}, {"itemIdentifier": "m4"}]));
    assert_eq!(groups[1]["items"][0]["item_id"], "m2");
    // The plan recorded each item's dequeue in its trace.
    assert_eq!(h.stages(&event_id(&a1)).await, ["dequeued"]);
    assert_eq!(h.stages(&event_id(&a2)).await, ["dequeued"]);
    assert_eq!(h.stages("message:m4").await, ["dequeued"]);
    h.stop().await;
}

#[tokio::test]
async fn a_batch_that_is_not_a_list_of_messages_is_an_invalid_request() {
    let h = Harness::start("fn_plan_bad_input", &[]).await;
    let report =
        diagnostic(handler(&h.core, event(json!({"messages": [{"messageId": "m1"}]}))).await, "Sluice.InvalidRequest");
    assert!(report.error_message.starts_with("PlanInput: missing field `body`"), "{report:?}");
    assert!(h.redis.keys().await.is_empty(), "nothing recorded for a batch that was not read");
    h.stop().await;
}

#[tokio::test]
async fn the_bootstrap_answers_a_batch_through_the_runtime_api() {
    let h = Harness::start("fn_plan_bootstrap", &[]).await;
    let (payload, _, _) = batch();
    let expected = handler(&h.core, event(payload.clone())).await.unwrap();
    let reply = h.invoke_bootstrap(BOOTSTRAP, payload).await;
    assert_eq!(reply, Reply::Response { request_id: "req-0".into(), body: expected });
    h.stop().await;
}

#[test]
fn the_bootstrap_refuses_to_start_without_its_configuration() {
    harness::assert_refuses_to_start(BOOTSTRAP, &[("SLUICE_MAP_MAX_CONCURRENCY", "10")], "SLUICE_REDIS_URL is not set");
    // It reads no Cafe24 variable, but refuses a setting the state machine cannot honour.
    let vars = [("SLUICE_REDIS_URL", "redis://127.0.0.1:1"), ("SLUICE_MAP_MAX_CONCURRENCY", "41")];
    harness::assert_refuses_to_start(BOOTSTRAP, &vars, "SLUICE_MAP_MAX_CONCURRENCY is invalid: 41 is not from 1 to 40");
}

/// Redis that refuses the function, each way: the cold start ends with one
/// line naming what to look at, never with a panic.
#[test]
fn the_bootstrap_refuses_to_start_when_redis_refuses_it() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let nowhere = format!("redis://127.0.0.1:{port}");
    let says = format!("cannot connect to Redis (SLUICE_REDIS_URL): Redis at {nowhere}: unreachable");
    harness::assert_refuses_to_start(BOOTSTRAP, &[("SLUICE_REDIS_URL", &nowhere)], &says);

    let redis = sluice_testkit::TestRedis::tls("fn_plan_refused");
    let settings = redis.settings();
    let ca = settings.ca_file.unwrap().display().to_string();
    let wrong_password = settings.url.replace("sluice@", "sluice:not-it@");
    let vars = [("SLUICE_REDIS_URL", wrong_password.as_str()), ("SLUICE_REDIS_CA_FILE", &ca)];
    harness::assert_refuses_to_start(BOOTSTRAP, &vars, "the user or password was refused");

    let other_ca = sluice_testkit::unrelated_ca();
    let other = other_ca.ca_file().display().to_string();
    let right_password = settings.url.replace("sluice@", &format!("sluice:{}@", settings.password.unwrap()));
    let vars = [("SLUICE_REDIS_URL", right_password.as_str()), ("SLUICE_REDIS_CA_FILE", &other)];
    harness::assert_refuses_to_start(BOOTSTRAP, &vars, "the TLS handshake failed");

    let vars = [("SLUICE_REDIS_URL", right_password.as_str()), ("SLUICE_REDIS_CA_FILE", "/nonexistent/ca.pem")];
    harness::assert_refuses_to_start(BOOTSTRAP, &vars, "(SLUICE_REDIS_CA_FILE): cannot read the CA file");
}
