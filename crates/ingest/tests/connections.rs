//! Abuse at the connection level, over raw TCP: a huge head, a head that
//! never finishes, more connections than the cap. Each is refused with the
//! same JSON error body as any other rejection (or, for the cap, the
//! connection idle the longest makes room; with none idle, the new one
//! waits), and costs the server a bounded amount. And a sender that hangs
//! up just as ingest stops: its webhook is still enqueued.

use crate::support;

use serde_json::Value;
use sluice_testkit::{LatencyProxy, TestRedis};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use support::{BOUND, Harness, KEY, connection, product};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;

async fn connect(h: &Harness) -> TcpStream {
    let address = h.url.strip_prefix("http://").expect("an http URL");
    TcpStream::connect(address).await.expect("connect")
}

/// One response read off `stream`: its status and its body, parsed as JSON.
async fn read_response(stream: &mut TcpStream) -> (u16, Value) {
    let mut received = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = received.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&received[..end]).to_lowercase();
            let status = head[9..12].parse().expect("a status code");
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length: "))
                .map_or(0, |n| n.trim().parse().expect("a length"));
            if received.len() >= end + 4 + length {
                let body = &received[end + 4..end + 4 + length];
                let json = serde_json::from_slice(body)
                    .unwrap_or_else(|e| panic!("status {status}: body is not JSON ({e}): {head}"));
                return (status, json);
            }
        }
        let n = stream.read(&mut chunk).await.expect("read");
        assert!(n > 0, "closed before a whole response: {:?}", String::from_utf8_lossy(&received));
        received.extend_from_slice(&chunk[..n]);
    }
}

/// Resolves when the server closes `stream` (an end of file, or a reset).
async fn closed(stream: &mut TcpStream) {
    let _ = stream.read_to_end(&mut Vec::new()).await;
}

fn health_request() -> &'static [u8] {
    b"GET /health HTTP/1.1\r\nhost: ingest\r\n\r\n"
}

#[tokio::test]
async fn a_one_mebibyte_header_gets_a_json_431_and_nothing_is_kept() {
    let mut h = Harness::start("huge_head").await;
    let body = support::product("acme", 1).to_string();
    let request = format!(
        "POST /webhooks/cafe24 HTTP/1.1\r\nhost: ingest\r\nx-api-key: {KEY}\r\nx-padding: {}\r\n\
         content-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        "a".repeat(1024 * 1024),
        body.len()
    );
    let mut stream = connect(&h).await;
    stream.write_all(request.as_bytes()).await.unwrap();
    let (status, answer) = timeout(BOUND, read_response(&mut stream)).await.expect("answered in time");
    assert_eq!(status, 431, "{answer}");
    assert_eq!(answer["error"]["code"], "header_too_large", "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains("request head") && message.contains("32768"), "{message}");
    timeout(BOUND, closed(&mut stream)).await.expect("closed in time");

    h.shutdown().await;
    assert_eq!(h.queue.control.calls(), 0, "no send call was made");
    assert_eq!(h.redis.keys().await, Vec::<String>::new(), "no gate or trace was written");
}

#[tokio::test]
async fn a_head_not_finished_in_time_gets_a_json_408_and_is_closed() {
    let timeout_setting = Duration::from_millis(300);
    let mut h = Harness::start_with("head_timeout", |c| c.header_read_timeout = timeout_setting).await;

    let started = Instant::now();
    let mut partial = connect(&h).await;
    partial.write_all(b"POST /webhooks/cafe24 HTTP/1.1\r\nhost: ingest\r\nx-api-").await.unwrap();
    let (status, answer) = timeout(BOUND, read_response(&mut partial)).await.expect("answered in time");
    assert!(started.elapsed() >= timeout_setting, "answered before the timeout: {:?}", started.elapsed());
    assert_eq!(status, 408, "{answer}");
    assert_eq!(answer["error"]["code"], "request_timeout", "{answer}");
    timeout(BOUND, closed(&mut partial)).await.expect("closed in time");

    // A connection that sends nothing at all is closed without an answer.
    let mut idle = connect(&h).await;
    let mut rest = Vec::new();
    let read = timeout(BOUND, idle.read_to_end(&mut rest)).await.expect("closed in time");
    assert!(read.is_err() || rest.is_empty(), "{:?}", String::from_utf8_lossy(&rest));

    // The server still serves, and still shuts down gracefully.
    let mut fresh = connect(&h).await;
    fresh.write_all(health_request()).await.unwrap();
    assert_eq!(timeout(BOUND, read_response(&mut fresh)).await.expect("answered in time").0, 200);
    drop(fresh);
    h.shutdown().await;
}

/// A harness whose cap is two connections and whose head read timeout
/// outlasts every bound below: the server must not free a slot on its own
/// while the test runs.
async fn capped(test: &str) -> Harness {
    Harness::start_with(test, |c| {
        c.max_connections = 2;
        c.header_read_timeout = BOUND * 3;
    })
    .await
}

/// A webhook's whole request, for raw connections.
fn webhook_request(product_no: u64) -> Vec<u8> {
    let body = support::product("acme", product_no).to_string();
    format!(
        "POST /webhooks/cafe24 HTTP/1.1\r\nhost: ingest\r\nx-api-key: {KEY}\r\nx-trace-id: cap-{product_no}\r\n\
         content-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

#[tokio::test]
async fn connections_over_the_cap_wait_while_every_one_is_busy() {
    let mut h = capped("connection_cap").await;

    // Two connections, each in the middle of a webhook the queue holds.
    h.queue.control.hold();
    let mut held = Vec::new();
    for product_no in 1..=2 {
        let mut stream = connect(&h).await;
        stream.write_all(&webhook_request(product_no)).await.unwrap();
        held.push(stream);
    }

    // A third connects but is not served: no connection is idle.
    let mut third = connect(&h).await;
    third.write_all(health_request()).await.unwrap();
    let wait = Duration::from_millis(500);
    assert!(timeout(wait, read_response(&mut third)).await.is_err(), "served over the cap");

    // Once the two are answered, one of them (now idle) makes room.
    h.queue.control.release();
    for stream in &mut held {
        let (status, answer) = timeout(BOUND, read_response(stream)).await.expect("answered in time");
        assert_eq!(status, 202, "{answer}");
    }
    let (status, answer) = timeout(BOUND, read_response(&mut third)).await.expect("served once one was idle");
    assert_eq!(status, 200, "{answer}");

    drop(third);
    drop(held);
    h.shutdown().await;
}

#[tokio::test]
async fn idle_connections_make_room_for_new_ones_oldest_first() {
    let mut h = capped("idle_evicted").await;

    // Two idle connections fill the cap: one that has sent nothing, then
    // one kept alive after a request (proven accepted by its answer).
    let mut oldest = connect(&h).await;
    let mut kept_alive = connect(&h).await;
    kept_alive.write_all(health_request()).await.unwrap();
    assert_eq!(timeout(BOUND, read_response(&mut kept_alive)).await.expect("answered in time").0, 200);

    // A new connection is served at once, not after the head timeout…
    let mut fresh = connect(&h).await;
    fresh.write_all(health_request()).await.unwrap();
    let (status, answer) = timeout(BOUND, read_response(&mut fresh)).await.expect("served while two idle are open");
    assert_eq!(status, 200, "{answer}");
    // …because the connection idle the longest was closed to make room.
    timeout(BOUND, closed(&mut oldest)).await.expect("the oldest idle connection is closed");
    kept_alive.write_all(health_request()).await.unwrap();
    let (status, _) = timeout(BOUND, read_response(&mut kept_alive)).await.expect("the newer one still serves");
    assert_eq!(status, 200);

    drop((fresh, kept_alive));
    h.shutdown().await;
}

#[tokio::test]
async fn a_webhook_whose_sender_hung_up_as_ingest_stops_is_still_enqueued() {
    let redis = TestRedis::plain("hung_up_at_stop");
    let upstream: SocketAddr = redis.url().trim_start_matches("redis://").trim_end_matches('/').parse().unwrap();
    let proxy = LatencyProxy::start(upstream).await.unwrap();
    let settings = sluice_redis::ConnectSettings { url: proxy.redis_url(), ..redis.settings() };
    let mut h = Harness::start_on(redis, connection(settings).await, |_| {}).await;
    // Each of the acceptance's round trips (its delivery lease, then its
    // coalescing mark, then the send) now takes this long.
    proxy.set_delay(Duration::from_millis(400));

    let body = product("acme", 7).to_string();
    let mut stream = connect(&h).await;
    let request = format!(
        "POST /webhooks/cafe24 HTTP/1.1\r\nhost: ingest\r\nx-api-key: {KEY}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    // The lease is taken (read past the proxy): the acceptance runs, and
    // has its mark still to take before it hands the webhook over.
    let deadline = Instant::now() + BOUND;
    while h.keys_but_group_activity().await.is_empty() {
        assert!(Instant::now() < deadline, "the acceptance did not start within {BOUND:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    drop(stream);
    h.shutdown().await;
    let sent = h.drain().await;
    assert_eq!(sent.len(), 1, "{sent:?}");
}
