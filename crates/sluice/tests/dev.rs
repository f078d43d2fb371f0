//! `sluice dev` as a user runs it: a process serving SQS on 127.0.0.1,
//! talked to with the real SQS adapter.

use crate::support;
use sluice_aws::{SqsEndpoint, SqsQueue, sqs_client};
use sluice_domain::queue::{OutgoingMessage, ReceiveRequest};
use sluice_domain::{DedupId, GroupKey, WorkQueue};
use sluice_testkit::TestRedis;

use std::process::Command;
use std::time::{Duration, Instant};
use support::Dev;

fn message(group: &str, dedup: &str, body: &str) -> OutgoingMessage {
    OutgoingMessage::new(GroupKey::parse(group).unwrap(), DedupId::parse(dedup).unwrap(), body)
}

/// A FIFO queue of the test's own on dev's SQS endpoint: the pipe
/// consumes sluice-events.fifo, so tests of the endpoint use another.
async fn queue_at(dev: &mut Dev) -> SqsQueue {
    let endpoint = dev.url("SQS endpoint");
    let events = dev.url("Queue");
    assert!(events.starts_with(&endpoint) && events.ends_with("/sluice-events.fifo"), "{events}");
    let client = sqs_client(&SqsEndpoint::Local(endpoint)).await;
    let created = client
        .create_queue()
        .queue_name("test.fifo")
        .attributes(aws_sdk_sqs::types::QueueAttributeName::FifoQueue, "true")
        .send()
        .await
        .expect("CreateQueue");
    SqsQueue::new(client, created.queue_url().expect("queue url"))
}

fn request(max: u8, wait_s: u64) -> ReceiveRequest {
    ReceiveRequest::new(max, Duration::from_secs(30), Duration::from_secs(wait_s)).unwrap()
}

#[tokio::test]
async fn dev_serves_sqs_and_stops_on_ctrl_c() {
    let mut dev = Dev::start(None, &["--max-receive-count", "3"]);
    assert!(dev.wait_for_line("Redis: ").contains("private redis-server"), "{:?}", dev.seen);
    let queue = queue_at(&mut dev).await;
    let sent = [message("shop-a", "e1", "one"), message("shop-a", "e2", "two"), message("shop-b", "e3", "three")];
    let outcomes = queue.send_batch(&sent).await;
    assert!(outcomes.iter().all(|o| o.is_accepted()), "{outcomes:?}");
    let got = tokio::time::timeout(Duration::from_secs(30), queue.receive(request(10, 5))).await.unwrap().unwrap();
    let mut bodies: Vec<&str> = got.iter().map(|m| m.body.as_str()).collect();
    bodies.sort_unstable();
    assert_eq!(bodies, ["one", "three", "two"]);

    // The pipeline queue carries the redrive policy asked for.
    let client = queue.client();
    let attributes = client
        .get_queue_attributes()
        .queue_url(dev.url("Queue"))
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::RedrivePolicy)
        .send()
        .await
        .expect("GetQueueAttributes");
    let policy = attributes.attributes().unwrap()[&aws_sdk_sqs::types::QueueAttributeName::RedrivePolicy].clone();
    assert!(policy.contains("sluice-events-dlq.fifo") && policy.contains("\"maxReceiveCount\":3"), "{policy}");

    dev.signal("-INT");
    let status = dev.wait(Duration::from_secs(15));
    assert!(status.success(), "{status:?}");
    dev.wait_for_line("sluice dev stopped.");
}

#[tokio::test]
async fn a_killed_dev_loses_no_acknowledged_message() {
    let redis = TestRedis::new("a_killed_dev_loses_no_acknowledged_message");
    let prefix = redis.keyspace().prefix().to_owned();
    let mut dev = Dev::start(Some(&redis.url()), &["--key-prefix", &prefix]);
    let queue = queue_at(&mut dev).await;
    let sent = [message("g", "k1", "first"), message("g", "k2", "second")];
    assert!(queue.send_batch(&sent).await.iter().all(|o| o.is_accepted()));
    dev.signal("-KILL");
    dev.wait(Duration::from_secs(10));

    let mut again = Dev::start(Some(&redis.url()), &["--key-prefix", &prefix]);
    let queue = queue_at(&mut again).await;
    let got = tokio::time::timeout(Duration::from_secs(30), queue.receive(request(10, 5))).await.unwrap().unwrap();
    assert_eq!(got.iter().map(|m| m.body.as_str()).collect::<Vec<_>>(), ["first", "second"]);
}

/// Whether something accepts connections on `port` of 127.0.0.1.
fn listening(port: u16) -> bool {
    std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
}

#[tokio::test]
async fn a_killed_dev_takes_its_private_redis_down_and_keeps_the_data() {
    let dir = std::env::temp_dir().join(format!("sluice-dev-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let dir_arg = dir.to_string_lossy().into_owned();
    let mut dev = Dev::start(None, &["--redis-dir", &dir_arg]);
    let redis_line = dev.wait_for_line("Redis: ");
    let port: u16 = redis_line
        .split("127.0.0.1:")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {redis_line:?}"));
    let queue = queue_at(&mut dev).await;
    let sent = [message("g", "k1", "first"), message("g", "k2", "second")];
    assert!(queue.send_batch(&sent).await.iter().all(|o| o.is_accepted()));
    assert!(listening(port));
    dev.signal("-KILL");
    dev.wait(Duration::from_secs(10));
    // No destructor ran; the watchdog must still stop the server.
    let deadline = Instant::now() + Duration::from_secs(10);
    while listening(port) {
        assert!(Instant::now() < deadline, "the private redis-server outlived a killed sluice dev");
        std::thread::sleep(Duration::from_millis(20));
    }

    let mut again = Dev::start(None, &["--redis-dir", &dir_arg]);
    let queue = queue_at(&mut again).await;
    let got = tokio::time::timeout(Duration::from_secs(30), queue.receive(request(10, 5))).await.unwrap().unwrap();
    assert_eq!(got.iter().map(|m| m.body.as_str()).collect::<Vec<_>>(), ["first", "second"]);
    drop(again);
    let _ = std::fs::remove_dir_all(&dir);
}

/// With --functions processes the ingest function runs with the
/// template's settings: an ingest flag it would ignore is refused, before
/// anything starts.
#[test]
fn dev_refuses_an_ingest_flag_the_ingest_function_would_ignore() {
    for flag in [&["--accept-deadline-ms", "250"][..], &["--max-accepting", "8"], &["--no-flow-control"]] {
        let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args(["dev", "--functions", "processes"])
            .args(flag)
            .output()
            .expect("run sluice");
        assert_eq!(out.status.code(), Some(2), "{flag:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(flag[0]) && stderr.contains("template"), "{flag:?}: {stderr}");
    }
}

#[test]
fn dev_refuses_a_bad_option_with_exit_2() {
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["dev", "--max-receive-count", "0"])
        .output()
        .expect("run sluice");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--max-receive-count"));
}
