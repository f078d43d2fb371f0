//! Valid webhooks: enqueued once, coalesced into a pending fetch, or
//! recognised as redeliveries; every outcome in the answer, the counters
//! and the event's trace.

use crate::support;

use redis::AsyncCommands;
use reqwest::StatusCode;
use serde_json::json;
use sha2::{Digest, Sha256};
use sluice_cafe24::Secret;
use sluice_domain::{GroupKey, Topic, WorkItem};
use sluice_ingest::{ApiKeys, IngestConfig};
use sluice_redis::{Gates, Tag, Taken};
use std::time::Duration;
use support::{BOUND, Harness, KEY, OTHER_KEY, event_id, product};

#[tokio::test]
async fn an_accepted_webhook_is_enqueued_once_and_traced() {
    let h = Harness::start("enqueued").await;
    let (status, answer) = h.send(&product("acme", 7), Some("t-7")).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    let id = "s:acme:90002:product:7:t-7";
    assert_eq!(answer, json!({"event_ids": [id], "status": "enqueued"}));

    let messages = h.drain().await;
    assert_eq!(messages.len(), 1);
    let message = &messages[0];
    assert_eq!(message.group, GroupKey::shop("acme", Topic(90002)));
    assert_eq!(message.dedup.as_str(), id);
    let WorkItem::Shop(work) = WorkItem::from_body(&message.body).unwrap() else { panic!("not a shop event") };
    assert_eq!((work.event_id.as_str(), work.event.delivery_id.as_str()), (id, "t-7"));
    assert_eq!(work.resource_gate(), "product:7");

    let trace = h.trace(id).await;
    assert_eq!(trace.iter().map(|e| e.stage.as_str()).collect::<Vec<_>>(), ["received", "enqueued"]);
    assert_eq!(
        trace[0].detail,
        json!({"mall_id": "acme", "topic": 90002, "resource": "product:7", "delivery_id": "t-7", "retry": false})
    );
    assert_eq!(trace[1].detail["message_id"], message.message_id.as_str());

    // The gates it set, each with its TTL.
    let ks = h.keyspace();
    let mut conn = h.redis.conn().await;
    let duplicate_gate = ks.key(&Tag::for_event(id), "gate", "ingest");
    let pending_mark = ks.key(&Tag::for_mall("acme"), "gate", "product:7");
    let ttl: i64 = conn.pttl(&duplicate_gate).await.unwrap();
    assert!((1..=300_000).contains(&ttl), "{ttl}");
    let ttl: i64 = conn.pttl(&pending_mark).await.unwrap();
    assert!((300_001..=900_000).contains(&ttl), "{ttl}");
    let owner: String = conn.get(&pending_mark).await.unwrap();
    assert_eq!(owner, id);

    // The rotated-in key is as good as the first.
    let (status, answer) = h.post(product("acme", 8).to_string(), Some(OTHER_KEY), Some("t-8")).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    assert_eq!(h.ingest.snapshot().enqueued, 2);
}

#[tokio::test]
async fn without_a_trace_id_the_body_digest_identifies_the_delivery() {
    let h = Harness::start("digest").await;
    let body = r#"{"event_no":90024,"resource":{"mall_id":"acme","order_id":"20250101-0000007"}}"#;
    let (status, answer) = h.post(body, Some(KEY), None).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    let digest = hex::encode(Sha256::digest(body.as_bytes()));
    assert_eq!(event_id(&answer), format!("s:acme:90024:order:20250101-0000007:{digest}"));
    // The same bytes again are the same delivery.
    let (_, again) = h.post(body, Some(KEY), None).await;
    assert_eq!(again["status"], "duplicate");
    assert_eq!(h.drain().await.len(), 1);
}

#[tokio::test]
async fn a_webhook_for_a_pending_resource_is_coalesced_into_its_fetch() {
    let h = Harness::start("coalesced").await;
    let (_, first) = h.send(&product("acme", 7), Some("t-a")).await;
    let (status, second) = h.send(&product("acme", 7), Some("t-b")).await;
    let (_, other) = h.send(&product("acme", 8), Some("t-c")).await;
    let (_, elsewhere) = h.send(&product("zeta", 7), Some("t-d")).await;
    let (a, b) = (event_id(&first), event_id(&second));
    assert_eq!(status, StatusCode::ACCEPTED, "{second}");
    assert_eq!(second, json!({"event_ids": [b], "status": "coalesced", "into": a}));
    assert_eq!([&first["status"], &other["status"], &elsewhere["status"]], ["enqueued"; 3]);

    let messages = h.drain().await;
    let ids: Vec<&str> = messages.iter().map(|m| m.dedup.as_str()).collect();
    assert_eq!(ids.len(), 3);
    assert!(ids.contains(&a.as_str()) && !ids.contains(&b.as_str()), "{ids:?}");

    let trace = h.trace(&b).await;
    assert_eq!(trace.iter().map(|e| e.stage.as_str()).collect::<Vec<_>>(), ["received", "coalesced"]);
    assert_eq!(trace[1].detail, json!({"into": a}));

    // The fetch step takes the mark and learns who joined; a webhook after
    // that is enqueued again (its change may postdate the fetch).
    let gates = Gates::new(h.redis.conn().await, h.keyspace());
    let taken = gates.take(&Tag::for_mall("acme"), "product:7", &a).await.unwrap();
    assert_eq!(taken, Taken::Owned { joined: vec![b.clone()] });
    let (_, later) = h.send(&product("acme", 7), Some("t-e")).await;
    assert_eq!(later["status"], "enqueued");
    assert_eq!(h.drain().await.len(), 1);

    let counted = h.ingest.snapshot();
    assert_eq!((counted.enqueued, counted.coalesced, counted.duplicates), (4, 1, 0));
}

#[tokio::test]
async fn a_redelivery_is_a_duplicate_and_never_reaches_the_coalescing_gate() {
    let h = Harness::start("duplicates").await;
    let (_, first) = h.send(&product("acme", 7), Some("t-a")).await;
    let (_, joined) = h.send(&product("acme", 7), Some("t-b")).await;
    let (status, again) = h.send(&product("acme", 7), Some("t-a")).await;
    let (_, joined_again) = h.send(&product("acme", 7), Some("t-b")).await;
    let (a, b) = (event_id(&first), event_id(&joined));
    assert_eq!(status, StatusCode::ACCEPTED, "{again}");
    assert_eq!(again, json!({"event_ids": [a], "status": "duplicate"}));
    assert_eq!(joined_again, json!({"event_ids": [b], "status": "duplicate"}));

    assert_eq!(h.drain().await.len(), 1, "one message for the one event");
    assert_eq!(h.stages(&a).await, ["received", "enqueued", "duplicate"]);
    assert_eq!(h.stages(&b).await, ["received", "coalesced", "duplicate"]);
    // Only the first delivery of b joined the pending fetch.
    let gates = Gates::new(h.redis.conn().await, h.keyspace());
    let taken = gates.take(&Tag::for_mall("acme"), "product:7", &a).await.unwrap();
    assert_eq!(taken, Taken::Owned { joined: vec![b] });
    assert_eq!(h.ingest.snapshot().duplicates, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redelivery_while_the_first_is_undecided_is_told_to_retry() {
    let h = Harness::start("in_progress").await;
    h.queue.control.hold();
    let first = {
        let (url, http) = (h.url.clone(), h.http.clone());
        tokio::spawn(async move {
            let response = http
                .post(format!("{url}/webhooks/cafe24"))
                .header("x-api-key", KEY)
                .header("x-trace-id", "t-x")
                .body(product("acme", 7).to_string())
                .send()
                .await
                .unwrap();
            (response.status(), response.json::<serde_json::Value>().await.unwrap())
        })
    };
    tokio::time::timeout(BOUND, async {
        while h.queue.control.calls() == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await
    .expect("the first delivery reaches the queue");

    let (status, answer) = h.send(&product("acme", 7), Some("t-x")).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{answer}");
    assert_eq!(answer["error"]["code"], "delivery_in_progress");

    h.queue.control.release();
    let (status, answer) = tokio::time::timeout(BOUND, first).await.unwrap().unwrap();
    assert_eq!((status, answer["status"].as_str()), (StatusCode::ACCEPTED, Some("enqueued")));
    let (_, answer) = h.send(&product("acme", 7), Some("t-x")).await;
    assert_eq!(answer["status"], "duplicate");
    assert_eq!(h.drain().await.len(), 1);
}

#[tokio::test]
async fn a_redelivery_after_the_window_but_before_the_fetch_is_still_a_duplicate() {
    let h = Harness::start_with("late_redelivery", |c| {
        // The lease must outlast the first acceptance (or its mark is never
        // confirmed), however slow a loaded machine makes it.
        c.duplicate_window = Duration::from_millis(2_000);
        c.accept_lease = Duration::from_millis(1_000);
    })
    .await;
    let (_, first) = h.send(&product("acme", 7), Some("t-a")).await;
    let id = event_id(&first);
    let gate = h.keyspace().key(&Tag::for_event(&id), "gate", "ingest");
    let mut conn = h.redis.conn().await;
    tokio::time::timeout(BOUND, async {
        while conn.exists::<_, bool>(&gate).await.unwrap() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the duplicate window ends");
    let (status, again) = h.send(&product("acme", 7), Some("t-a")).await;
    assert_eq!((status, again["status"].as_str()), (StatusCode::ACCEPTED, Some("duplicate")), "{again}");
    assert_eq!(h.drain().await.len(), 1);
}

#[tokio::test]
async fn counters_add_up_and_debug_output_holds_no_key() {
    let h = Harness::start("counters").await;
    h.send(&product("acme", 1), Some("t-1")).await;
    h.send(&product("acme", 1), Some("t-2")).await;
    h.send(&product("acme", 1), Some("t-2")).await;
    h.post("{", Some(KEY), None).await;
    h.post(product("acme", 1).to_string(), Some("nope"), None).await;
    let c = h.ingest.snapshot();
    assert_eq!((c.received, c.enqueued, c.coalesced, c.duplicates, c.rejected.total()), (5, 1, 1, 1, 2));
    assert_eq!(c.received, c.enqueued + c.coalesced + c.duplicates + c.rejected.total());
    assert_eq!((c.batch_calls, c.batched_entries), (1, 1));

    let shown = format!("{:?}", h.ingest);
    let keys = ApiKeys::from_list(&Secret::from(format!("{KEY},{OTHER_KEY}"))).unwrap();
    let config = format!("{:?}", IngestConfig::new(keys));
    for text in [&shown, &config] {
        assert!(!text.contains(KEY) && !text.contains(OTHER_KEY), "{text}");
        assert!(text.contains("***"), "{text}");
    }
}
