//! What a webhook costs in Redis at ingest, counted at the client: the
//! round trips its request waits for one after another (its latency) and
//! the requests it sends (what ElastiCache bills). The delivery's gate and
//! its trace entry go in one call under the event's hash tag; the writes
//! after the send go side by side.

use crate::support;

use reqwest::StatusCode;
use sluice_testkit::TestRedis;
use sluice_testkit::round_trips::CountingConnection;
use support::{Harness, connection, product};

type Counted = CountingConnection<sluice_redis::Connection>;

/// The answer's status, and the (round trips waited for, requests sent)
/// that sending `body` cost.
async fn send(h: &Harness<Counted>, conn: &Counted, body: &serde_json::Value, trace: &str) -> (String, (u64, u64)) {
    let (waits, trips) = (conn.waits(), conn.trips());
    let (status, answer) = h.send(body, Some(trace)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    let status = answer["status"].as_str().unwrap_or_default().to_owned();
    (status, (conn.waits() - waits, conn.trips() - trips))
}

#[tokio::test]
async fn a_webhook_waits_for_at_most_three_redis_round_trips() {
    let redis = TestRedis::new("ingest_round_trips");
    let conn = CountingConnection::new(connection(redis.settings()).await);
    let h = Harness::start_on(redis, conn.clone(), |_| {}).await;
    // The first use of each script loads it (EVALSHA, then EVAL): once per
    // server, not per webhook.
    send(&h, &conn, &product("acme", 1), "warm-a").await;
    send(&h, &conn, &product("acme", 1), "warm-b").await;

    // A change of its own: the delivery's lease with `received`; the
    // coalescing mark; after the send, the mark confirmed, the group's
    // ledger entry, and the delivery settled with `enqueued`, side by side.
    assert_eq!(send(&h, &conn, &product("acme", 2), "t-a").await, ("enqueued".into(), (3, 5)));
    // A second change of the product joins the pending fetch.
    assert_eq!(send(&h, &conn, &product("acme", 2), "t-b").await, ("coalesced".into(), (3, 3)));
    // A redelivery is answered from the delivery's gate, traced in the
    // same call.
    assert_eq!(send(&h, &conn, &product("acme", 2), "t-a").await, ("duplicate".into(), (1, 1)));
    let stages = h.stages("s:acme:90002:product:2:t-a").await;
    assert_eq!(stages, ["received", "enqueued", "duplicate"]);
}
