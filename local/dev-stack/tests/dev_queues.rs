//! `sluice dev`'s event queues choose groups as SQS FIFO does unless told
//! to go round-robin, and a stack asking for the other scan than its
//! queues were made with is refused, naming the flags that keep them.

use crate::support;

use sluice_cafe24::{Cafe24Config, Secret};
use sluice_dev_stack::{DevConfig, DevStack, EVENTS_DLQ, EVENTS_QUEUE, FLUSH_QUEUE};
use sluice_sheets::SheetsConfig;
use sluice_sqs_emulator::{GroupScan, QueueBackend, RedisBackend, SQS_FIFO_SCAN_WINDOW};
use sluice_testkit::TestRedis;

fn config(redis: &TestRedis) -> DevConfig {
    let cafe24 = Cafe24Config::new("unused", Secret::new("unused"));
    support::dev_config(redis, cafe24, SheetsConfig::new("", ""))
}

async fn scan_of(redis: &TestRedis, queue: &str) -> GroupScan {
    let backend = RedisBackend::new(redis.conn().await, redis.keyspace());
    backend.queue_info(queue).await.expect("queue info").config.group_scan
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_event_queues_scan_as_sqs_fifo_unless_told_otherwise() {
    let redis = TestRedis::new("dev_queues::sqs_fifo");
    let config = config(&redis);
    let stack = DevStack::start(redis.conn().await, config.clone()).await.expect("stack");
    let sqs = GroupScan::SqsFifo { window: SQS_FIFO_SCAN_WINDOW };
    assert_eq!(scan_of(&redis, EVENTS_QUEUE).await, sqs);
    assert_eq!(scan_of(&redis, EVENTS_DLQ).await, sqs);
    assert_eq!(scan_of(&redis, FLUSH_QUEUE).await, GroupScan::RoundRobin, "a standard queue is a ring");
    stack.stop().await.expect("stop");

    let round_robin = DevConfig { group_scan: GroupScan::RoundRobin, ..config };
    let refused = DevStack::start(redis.conn().await, round_robin).await.expect_err("the other scan is refused");
    let message = format!("{refused:#}");
    assert!(message.contains("--group-scan sqs-fifo --scan-window 120000"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_robin_is_kept_when_asked_for() {
    let redis = TestRedis::new("dev_queues::round_robin");
    let config = DevConfig { group_scan: GroupScan::RoundRobin, ..config(&redis) };
    let stack = DevStack::start(redis.conn().await, config).await.expect("stack");
    assert_eq!(scan_of(&redis, EVENTS_QUEUE).await, GroupScan::RoundRobin);
    assert_eq!(scan_of(&redis, EVENTS_DLQ).await, GroupScan::RoundRobin);
    stack.stop().await.expect("stop");
}
