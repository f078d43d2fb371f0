//! Webhooks arriving together share `SendMessageBatch`-sized calls; each is
//! still enqueued exactly once, a sequential sender's group keeps its
//! order, and a graceful shutdown answers every request in flight.

use crate::support;

use futures::future::join_all;
use reqwest::StatusCode;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;
use std::time::Duration;
use support::{BOUND, Harness, KEY, event_id, product};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_concurrent_webhooks_share_send_calls_and_each_is_enqueued_once() {
    let h = Harness::start("fifty").await;
    let answers = tokio::time::timeout(
        BOUND,
        join_all((1..=50).map(|i| {
            let body = product(&format!("mall-{}", i % 5), i);
            let h = &h;
            async move { h.send(&body, Some(&format!("t-{i}"))).await }
        })),
    )
    .await
    .expect("all answered");
    let mut answered = BTreeSet::new();
    for (status, answer) in &answers {
        assert_eq!((*status, answer["status"].as_str()), (StatusCode::ACCEPTED, Some("enqueued")), "{answer}");
        answered.insert(event_id(answer));
    }
    assert_eq!(answered.len(), 50);

    let calls = h.queue.control.calls();
    assert!(calls < 50, "{calls} send calls for 50 webhooks");
    assert_eq!(h.queue.control.entries.load(Ordering::SeqCst), 50);
    let snapshot = h.ingest.snapshot();
    assert_eq!((snapshot.batched_entries, snapshot.enqueued), (50, 50));
    println!("50 concurrent webhooks: {calls} send calls ({} batches)", snapshot.batch_calls);

    let messages = h.drain().await;
    let enqueued: BTreeSet<String> = messages.iter().map(|m| m.dedup.as_str().to_owned()).collect();
    assert_eq!(messages.len(), 50, "no message twice");
    assert_eq!(enqueued, answered);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sequential_senders_group_keeps_its_order_amid_concurrent_batches() {
    let h = Harness::start("order").await;
    // Five senders at once, each sending its mall's webhooks one by one.
    let sent: Vec<Vec<String>> = tokio::time::timeout(
        BOUND,
        join_all((0..5).map(|mall| {
            let h = &h;
            async move {
                let mut ids = Vec::new();
                for n in 1..=20 {
                    let (status, answer) = h.send(&product(&format!("mall-{mall}"), n), Some(&format!("t-{n}"))).await;
                    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
                    ids.push(event_id(&answer));
                }
                ids
            }
        })),
    )
    .await
    .expect("all answered");

    let mut received: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for message in h.drain().await {
        received.entry(message.group.as_str().to_owned()).or_default().push(message.dedup.as_str().to_owned());
    }
    assert_eq!(received.len(), 5);
    for (mall, ids) in sent.iter().enumerate() {
        assert_eq!(received[&format!("gs:mall-{mall}:90002")], *ids, "mall-{mall}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graceful_shutdown_answers_every_webhook_in_flight() {
    let mut h = Harness::start("shutdown").await;
    h.queue.control.hold();
    let requests: Vec<_> = (0..20)
        .map(|i| {
            let (url, http) = (h.url.clone(), h.http.clone());
            tokio::spawn(async move {
                let response = http
                    .post(format!("{url}/webhooks/cafe24"))
                    .header("x-api-key", KEY)
                    .header("x-trace-id", format!("t-{i}"))
                    // Product numbers start at 1: 0 is refused.
                    .body(product("acme", i + 1).to_string())
                    .send()
                    .await
                    .unwrap();
                (response.status(), response.json::<serde_json::Value>().await.unwrap())
            })
        })
        .collect();
    // Every request has been read and the first batch is at the queue.
    tokio::time::timeout(BOUND, async {
        while h.ingest.snapshot().received < 20 || h.queue.control.calls() == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await
    .expect("all requests arrive");

    let url = h.url.clone();
    let control = h.queue.control.clone();
    let stopping = tokio::spawn(async move {
        h.shutdown().await;
        h
    });
    // New connections are refused once the server stops listening.
    tokio::time::timeout(BOUND, async {
        while sluice_http::client().get(format!("{url}/health")).send().await.is_ok() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the listener closes");
    assert!(!stopping.is_finished(), "the server waits for the requests in flight");
    control.release();

    let h = tokio::time::timeout(BOUND, stopping).await.unwrap().unwrap();
    for request in requests {
        let (status, answer) = request.await.unwrap();
        assert_eq!((status, answer["status"].as_str()), (StatusCode::ACCEPTED, Some("enqueued")), "{answer}");
    }
    assert_eq!(h.drain().await.len(), 20);
}
