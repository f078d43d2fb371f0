//! Back-pressure (issue 18 item 7): past `max_accepting` webhooks and rows
//! being accepted at once, or past `accept_deadline` of one's Redis work,
//! ingest answers 503 with `Retry-After` and a JSON error naming why, keeps
//! nothing (no delivery lease, no coalescing mark, no queued message), and
//! the sender's retry once the pressure is gone is accepted and enqueued
//! exactly once.

use crate::support;

use reqwest::StatusCode;
use serde_json::{Value, json};
use sluice_testkit::{LatencyProxy, TestRedis};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use support::{BOUND, Harness, KEY, connection, event_id, product};

/// One answer as a sender sees it: status, `Retry-After`, JSON body.
struct Answer {
    status: StatusCode,
    retry_after: Option<String>,
    body: Value,
}

impl Answer {
    /// A 503 naming `code`, with `Retry-After`.
    fn assert_refused(&self, code: &str) {
        assert_eq!(self.status, StatusCode::SERVICE_UNAVAILABLE, "{}", self.body);
        assert_eq!(self.body["error"]["code"], code, "{}", self.body);
        assert_eq!(self.retry_after.as_deref(), Some("1"), "{}", self.body);
    }
}

async fn post(h: &Harness, path: &str, body: &Value, trace: Option<&str>) -> Answer {
    let mut request = h.http.post(format!("{}{path}", h.url)).header("x-api-key", KEY).body(body.to_string());
    if let Some(trace) = trace {
        request = request.header("x-trace-id", trace);
    }
    let response = tokio::time::timeout(BOUND, request.send()).await.expect("answered in time").unwrap();
    let status = response.status();
    let retry_after = response.headers().get("retry-after").map(|v| v.to_str().unwrap().to_owned());
    Answer { status, retry_after, body: response.json().await.unwrap() }
}

/// Posts again while the answer is a 503 (a busy test machine can make
/// even a quick Redis miss a short deadline), for [`BOUND`] at most; the
/// last answer.
async fn until_not_refused(h: &Harness, path: &str, body: &Value, trace: Option<&str>) -> Answer {
    let deadline = Instant::now() + BOUND;
    loop {
        let answer = post(h, path, body, trace).await;
        if answer.status != StatusCode::SERVICE_UNAVAILABLE || Instant::now() > deadline {
            return answer;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn row(row_id: &str) -> Value {
    json!({
        "credential_id": "cred-1", "spreadsheet_id": "1Sheet_id", "sheet_id": 0,
        "submission_id": format!("sub-{row_id}"), "row_id": row_id, "header": ["n"], "values": [1]
    })
}

/// Polls `done` until it holds, for [`BOUND`] at most.
async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + BOUND;
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within {BOUND:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn past_max_accepting_a_webhook_or_row_is_refused_untouched_and_its_retry_is_enqueued_once() {
    let h = Harness::start_with("overloaded", |c| c.max_accepting = 1).await;
    // The one permit: a webhook whose send the queue holds.
    h.queue.control.hold();
    let first = tokio::spawn({
        let (http, url) = (h.http.clone(), h.url.clone());
        async move {
            let request = http.post(format!("{url}/webhooks/cafe24")).header("x-api-key", KEY);
            let response = request.header("x-trace-id", "t-a").body(product("acme", 1).to_string()).send().await;
            let response = response.unwrap();
            (response.status(), response.json::<Value>().await.unwrap())
        }
    });
    wait_until("the first webhook reaches the queue", || h.queue.control.calls() == 1).await;

    let keys_before = h.redis.keys().await;
    let refused = post(&h, "/webhooks/cafe24", &product("acme", 2), Some("t-b")).await;
    refused.assert_refused("overloaded");
    assert!(refused.body["error"]["message"].as_str().unwrap().contains("send it again"), "{}", refused.body);
    post(&h, "/sheets/rows", &row("row-1"), None).await.assert_refused("overloaded");
    // Refused before touching Redis: no lease, mark, trace or log was left.
    assert_eq!(h.redis.keys().await, keys_before);
    assert_eq!(h.ingest.snapshot().rejected[sluice_ingest::ErrorCode::Overloaded], 2);

    h.queue.control.release();
    let (status, answer) = tokio::time::timeout(BOUND, first).await.expect("answered in time").unwrap();
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    // The pressure is gone: the retries get through, each enqueued once.
    let retried = post(&h, "/webhooks/cafe24", &product("acme", 2), Some("t-b")).await;
    assert_eq!((retried.status, &retried.body["status"]), (StatusCode::ACCEPTED, &json!("enqueued")));
    let row_retried = post(&h, "/sheets/rows", &row("row-1"), None).await;
    assert_eq!(row_retried.status, StatusCode::ACCEPTED, "{}", row_retried.body);
    let again = post(&h, "/webhooks/cafe24", &product("acme", 2), Some("t-b")).await;
    assert_eq!(again.body["status"], "duplicate", "{}", again.body);
    let mut sent: Vec<String> = h.drain().await.into_iter().map(|m| m.dedup.as_str().to_owned()).collect();
    sent.sort();
    let mut expected = vec![event_id(&answer), event_id(&retried.body), event_id(&row_retried.body)];
    expected.sort();
    assert_eq!(sent, expected);
}

#[tokio::test]
async fn past_the_deadline_on_a_slow_redis_nothing_is_kept_and_the_retry_is_enqueued_once() {
    let redis = TestRedis::plain("deadline");
    let upstream: SocketAddr = redis.url().trim_start_matches("redis://").trim_end_matches('/').parse().unwrap();
    let proxy = LatencyProxy::start(upstream).await.unwrap();
    let settings = sluice_redis::ConnectSettings { url: proxy.redis_url(), ..redis.settings() };
    let conn = connection(settings).await;
    let h = Harness::start_on(redis, conn, |c| c.accept_deadline = Duration::from_millis(100)).await;
    // Each round trip now takes longer than the whole deadline.
    proxy.set_delay(Duration::from_millis(150));

    let refused = post(&h, "/webhooks/cafe24", &product("acme", 3), Some("t-c")).await;
    refused.assert_refused("deadline_exceeded");
    assert!(refused.body["error"]["message"].as_str().unwrap().contains("100 ms deadline"), "{}", refused.body);
    post(&h, "/sheets/rows", &row("row-2"), None).await.assert_refused("deadline_exceeded");
    assert_eq!(h.queue.control.calls(), 0, "nothing was sent");

    // Redis is quick again. The webhook's retry finds its lease given up
    // (not a 503 delivery_in_progress for the rest of the lease) and no
    // mark; the row no longer counts as queued.
    proxy.set_delay(Duration::ZERO);
    let retried = until_not_refused(&h, "/webhooks/cafe24", &product("acme", 3), Some("t-c")).await;
    assert_eq!((retried.status, &retried.body["status"]), (StatusCode::ACCEPTED, &json!("enqueued")));
    let row_retried = until_not_refused(&h, "/sheets/rows", &row("row-2"), None).await;
    assert_eq!((row_retried.status, &row_retried.body["status"]), (StatusCode::ACCEPTED, &json!("enqueued")));
    // Refused first, enqueued last (a busy machine may add refusals between).
    let stages = h.stages(&event_id(&retried.body)).await.join(" ");
    assert!(stages.starts_with("received rejected") && stages.ends_with("received enqueued"), "{stages}");
    let stages = h.stages("row:cred-1:row-2").await.join(" ");
    assert!(stages.starts_with("INIT FAILED") && stages.ends_with("INIT ENQUEUED"), "{stages}");
    let sent: Vec<String> = h.drain().await.into_iter().map(|m| m.dedup.as_str().to_owned()).collect();
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert!(sent.contains(&event_id(&retried.body)) && sent.contains(&event_id(&row_retried.body)), "{sent:?}");
}

/// A Redis slower than the connection's response timeout: the command
/// gives up, but Redis still runs it when it gets to it. The 503 must not
/// say "nothing was kept" then (the load test found rows so answered in
/// their sheets), and the retry is kept once.
#[tokio::test]
async fn a_command_that_timed_out_may_have_run_the_answer_says_so_and_the_retry_is_kept_once() {
    let redis = TestRedis::plain("timed_out");
    let upstream: SocketAddr = redis.url().trim_start_matches("redis://").trim_end_matches('/').parse().unwrap();
    let proxy = LatencyProxy::start(upstream).await.unwrap();
    let settings = sluice_redis::ConnectSettings {
        url: proxy.redis_url(),
        response_timeout: Duration::from_millis(300),
        reconnect_retries: 1,
        ..redis.settings()
    };
    let conn = sluice_redis::connect(&settings).await.unwrap();
    let h = Harness::start_on(redis, conn, |_| {}).await;
    proxy.set_delay(Duration::from_millis(600));

    let refused = post(&h, "/sheets/rows", &row("row-3"), None).await;
    refused.assert_refused("store_unavailable");
    let message = refused.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("may have been kept") && !message.contains("nothing was kept"), "{message}");

    // The command the client gave up on usually runs once the proxy lets
    // it by; whether it does depends on whether the proxy had forwarded it
    // before the client dropped the connection, which a loaded machine
    // decides. Either way the retry must be kept exactly once.
    proxy.set_delay(Duration::ZERO);
    let direct = sluice_redis::Traces::new(h.redis.conn().await, h.keyspace(), Duration::from_secs(60));
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut ran = false;
    while !ran && Instant::now() < deadline {
        ran = !direct.read("row:cred-1:row-3").await.unwrap().is_empty();
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!("the timed-out command {} in Redis", if ran { "ran" } else { "did not run" });
    let retried = until_not_refused(&h, "/sheets/rows", &row("row-3"), None).await;
    assert_eq!(retried.status, StatusCode::ACCEPTED, "{}", retried.body);
    let sent = h.drain().await;
    assert_eq!(sent.len(), 1, "{sent:?}");
}
