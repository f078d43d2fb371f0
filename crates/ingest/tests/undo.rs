//! When the queue does not take a message, or Redis fails, the sender gets
//! a 5xx (or 400 for a message the queue calls malformed), the leases the
//! request held are given up at once, and the retry gets through.

use crate::support;

use redis::AsyncCommands;
use reqwest::StatusCode;
use serde_json::json;
use sluice_ingest::ErrorCode;
use sluice_private_servers::{RedisProcess, ServerOptions};
use sluice_redis::{ConnectSettings, Tag};
use sluice_testkit::TestRedis;
use support::{Harness, KEY, Mode, connection, event_id, product};

#[tokio::test]
async fn a_queue_failure_releases_both_leases_and_the_retry_gets_through() {
    let h = Harness::start("queue_down").await;
    h.queue.control.set(Mode::Unavailable);
    let response = h
        .http
        .post(format!("{}/webhooks/cafe24", h.url))
        .header("x-api-key", KEY)
        .header("x-trace-id", "t-a")
        .body(product("acme", 7).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(response.headers()["retry-after"], "1");
    let answer: serde_json::Value = response.json().await.unwrap();
    assert_eq!(answer["error"]["code"], "queue_unavailable", "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("ServiceUnavailable"), "{answer}");

    // No coalescing mark is left, and nothing waits in the group: the
    // trace remains, the ledger's note that the group was active, and the
    // delivery's memory that an attempt was made, its lease ended.
    let a = "s:acme:90002:product:7:t-a";
    let trace_key = h.keyspace().key(&Tag::for_event(a), "trace", "");
    let delivery = h.keyspace().key(&Tag::for_event(a), "gate", "ingest");
    assert_eq!(h.keys_but_group_activity().await, [delivery.clone(), trace_key]);
    let attempt: String = h.redis.conn().await.get(&delivery).await.unwrap();
    assert!(attempt.starts_with("attempt:") && attempt.ends_with(":0"), "{attempt}");
    assert_eq!(h.ledger().await.lagging(10).await.unwrap().1, 0);
    let trace = h.trace(a).await;
    assert_eq!(trace.iter().map(|e| e.stage.as_str()).collect::<Vec<_>>(), ["received", "rejected"]);
    assert_eq!(trace[1].detail["code"], "queue_unavailable");
    // A second event for the product is not coalesced into the failed one.
    let (status, answer) = h.send(&product("acme", 7), Some("t-b")).await;
    assert_eq!((status, &answer["error"]["code"]), (StatusCode::SERVICE_UNAVAILABLE, &json!("queue_unavailable")));
    assert_eq!(h.visible().await, 0);

    // Both retries get through at once. A retry may follow a send the
    // queue did take after all, so it starts no mark: each is enqueued.
    h.queue.control.set(Mode::Accept);
    let (status, answer) = h.send(&product("acme", 7), Some("t-a")).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    assert_eq!(answer, json!({"event_ids": [a], "status": "enqueued"}));
    let (_, answer) = h.send(&product("acme", 7), Some("t-b")).await;
    assert_eq!(answer["status"], "enqueued", "{answer}");
    // A new delivery marks the product again, and the next one joins it.
    let (_, answer) = h.send(&product("acme", 7), Some("t-c")).await;
    let c = event_id(&answer);
    let (_, answer) = h.send(&product("acme", 7), Some("t-d")).await;
    assert_eq!((&answer["status"], &answer["into"]), (&json!("coalesced"), &json!(c)));
    let messages = h.drain().await;
    let b = "s:acme:90002:product:7:t-b";
    assert_eq!(messages.iter().map(|m| m.dedup.as_str()).collect::<Vec<_>>(), [a, b, c.as_str()]);
    assert_eq!(h.stages(a).await, ["received", "rejected", "received", "enqueued"]);

    let c = h.ingest.snapshot();
    assert_eq!((c.rejected[ErrorCode::QueueUnavailable], c.enqueued, c.coalesced), (2, 3, 1));
}

#[tokio::test]
async fn a_message_the_queue_refuses_is_a_400_and_undone() {
    let h = Harness::start("queue_refuses").await;
    h.queue.control.set(Mode::Refuse);
    let (status, answer) = h.send(&product("acme", 7), Some("t-a")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert_eq!(answer["error"]["code"], "queue_refused");
    let id = "s:acme:90002:product:7:t-a";
    let tag = Tag::for_event(id);
    assert_eq!(
        h.keys_but_group_activity().await,
        [h.keyspace().key(&tag, "gate", "ingest"), h.keyspace().key(&tag, "trace", "")]
    );
    assert_eq!(h.ledger().await.lagging(10).await.unwrap().1, 0);
    h.queue.control.set(Mode::Accept);
    let (_, answer) = h.send(&product("acme", 7), Some("t-a")).await;
    assert_eq!(event_id(&answer), id);
    assert_eq!(answer["status"], "enqueued");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_outage_is_a_503_and_nothing_is_enqueued() {
    let server = RedisProcess::start(ServerOptions::default()).unwrap();
    let conn = connection(ConnectSettings::new(server.url())).await;
    // The keyspace only; this harness's Redis is the private server above.
    let h = Harness::start_on(TestRedis::new("redis_down"), conn, |_| {}).await;
    let (status, _) = h.send(&product("acme", 1), Some("t-1")).await;
    assert_eq!(status, StatusCode::ACCEPTED, "the private server works at first");
    drop(server);

    let (status, answer) = h.send(&product("acme", 2), Some("t-2")).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{answer}");
    assert_eq!(answer["error"]["code"], "store_unavailable");
    assert_eq!(h.queue.control.calls(), 1, "only the first webhook was sent");
    assert_eq!(h.drain().await.len(), 1);
    assert_eq!(h.ingest.snapshot().rejected[ErrorCode::StoreUnavailable], 1);
}
