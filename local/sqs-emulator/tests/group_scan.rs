//! The two group scans of a FIFO queue, on both stores, against what SQS
//! documents (SQS Developer Guide):
//!
//! - *FIFO queue delivery logic*: a receive "attempts to return as many
//!   messages with the same message group ID as possible", up to 10 in one
//!   call, and may add messages of other groups, each group's in order; a
//!   group's further messages are not received while some are in flight.
//! - *Avoid large message backlogs with the same message group ID*: "FIFO
//!   queues scan the first 120,000 messages to determine available message
//!   groups. If a large backlog builds up in a single message group,
//!   messages from other groups sent later will remain blocked until the
//!   backlog is processed."
//!
//! So under [`GroupScan::SqsFifo`] groups come in the order of their oldest
//! message, and a group whose messages all lie beyond the window is not
//! seen. The window is scaled down here (SQS's is 120,000). These call the
//! store's `pull` directly, so a batch's exact make-up is checked; the
//! conformance suite checks the same order through every form.

use sluice_domain::queue::{OutgoingMessage, ReceivedMessage};
use sluice_domain::{DedupId, GroupKey};
use sluice_sqs_emulator::{GroupScan, MemoryBackend, QueueBackend, QueueConfig, RedisBackend, RedrivePolicy};
use sluice_testkit::TestRedis;
use std::time::Duration;

const VISIBLE_LONG: Duration = Duration::from_secs(60);

fn sqs(window: u32) -> GroupScan {
    GroupScan::SqsFifo { window }
}

/// Messages named `<group>-<i>`, sent in the order given.
async fn send<B: QueueBackend>(backend: &B, queue: &str, names: &[String]) {
    let messages: Vec<OutgoingMessage> = names
        .iter()
        .map(|name| {
            let group = name.split('-').next().expect("a group");
            OutgoingMessage::new(GroupKey::parse(group).unwrap(), DedupId::parse(name).unwrap(), name.clone())
        })
        .collect();
    for chunk in messages.chunks(10) {
        let entries: Vec<&OutgoingMessage> = chunk.iter().collect();
        backend.send(queue, &entries).await.expect("send");
    }
}

fn names(list: &str) -> Vec<String> {
    list.split_whitespace().map(str::to_owned).collect()
}

/// `n` messages of `group`.
fn group_of(group: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{group}-{i}")).collect()
}

async fn pull<B: QueueBackend>(backend: &B, queue: &str, max: u8, visibility: Duration) -> Vec<ReceivedMessage> {
    backend.pull(queue, max, visibility).await.expect("pull").messages
}

fn bodies(messages: &[ReceivedMessage]) -> Vec<&str> {
    messages.iter().map(|m| m.body.as_str()).collect()
}

async fn delete<B: QueueBackend>(backend: &B, queue: &str, messages: &[ReceivedMessage]) {
    for m in messages {
        backend.delete_message(queue, &m.receipt).await.expect("delete");
    }
}

async fn queue<B: QueueBackend>(backend: &B, scan: GroupScan) -> &'static str {
    backend.create_queue("q.fifo", &QueueConfig { group_scan: scan, ..QueueConfig::default() }).await.expect("create");
    "q.fifo"
}

async fn groups_come_in_the_order_of_their_oldest_message<B: QueueBackend>(backend: B) {
    let q = queue(&backend, GroupScan::default()).await;
    send(&backend, q, &names("b-0 a-0 c-0 a-1 b-1 b-2")).await;
    // As many of one group as possible, then the next group by its oldest.
    let all = pull(&backend, q, 10, VISIBLE_LONG).await;
    assert_eq!(bodies(&all), ["b-0", "b-1", "b-2", "a-0", "a-1", "c-0"]);
}

async fn a_group_in_flight_is_skipped<B: QueueBackend>(backend: B) {
    let q = queue(&backend, GroupScan::default()).await;
    send(&backend, q, &names("b-0 a-0 c-0 a-1 b-1")).await;
    let first = pull(&backend, q, 1, VISIBLE_LONG).await;
    assert_eq!(bodies(&first), ["b-0"]);
    assert_eq!(bodies(&pull(&backend, q, 1, VISIBLE_LONG).await), ["a-0"], "b is in flight: a is next");
    assert_eq!(bodies(&pull(&backend, q, 10, VISIBLE_LONG).await), ["c-0"]);
    delete(&backend, q, &first).await;
    assert_eq!(bodies(&pull(&backend, q, 10, VISIBLE_LONG).await), ["b-1"]);
}

async fn a_deep_group_ahead_hides_groups_beyond_the_window<B: QueueBackend>(backend: B) {
    let q = queue(&backend, sqs(100)).await;
    send(&backend, q, &[group_of("deep", 150), names("late-0")].concat()).await;
    let batch = pull(&backend, q, 10, VISIBLE_LONG).await;
    assert_eq!(bodies(&batch), bodies_of(&group_of("deep", 10)));
    // deep is in flight, and its messages fill the window (in-flight ones
    // count): late-0, visible and in a group of its own, is not seen.
    assert!(pull(&backend, q, 10, VISIBLE_LONG).await.is_empty(), "late-0 lies beyond the window of 100");
    delete(&backend, q, &batch).await;
    // Drained by one consumer, deep comes first until late-0 falls within
    // the window; then deep's head is still the oldest.
    let mut order = Vec::new();
    loop {
        let got = pull(&backend, q, 10, VISIBLE_LONG).await;
        if got.is_empty() {
            break;
        }
        delete(&backend, q, &got).await;
        order.extend(got.into_iter().map(|m| m.body));
    }
    assert_eq!(order.len(), 141);
    assert_eq!(order.last().map(String::as_str), Some("late-0"), "the backlog is processed first");
}

fn bodies_of(names: &[String]) -> Vec<&str> {
    names.iter().map(String::as_str).collect()
}

async fn a_window_past_the_backlog_sees_every_group<B: QueueBackend>(backend: B) {
    for (name, scan) in [("wide.fifo", sqs(151)), ("ring.fifo", GroupScan::RoundRobin)] {
        let config = QueueConfig { group_scan: scan, ..QueueConfig::default() };
        backend.create_queue(name, &config).await.expect("create");
        send(&backend, name, &[group_of("deep", 150), names("late-0")].concat()).await;
        assert_eq!(pull(&backend, name, 10, VISIBLE_LONG).await.len(), 10);
        assert_eq!(bodies(&pull(&backend, name, 10, VISIBLE_LONG).await), ["late-0"], "{scan}");
    }
}

async fn round_robin_serves_the_ring<B: QueueBackend>(backend: B) {
    let q = queue(&backend, GroupScan::RoundRobin).await;
    send(&backend, q, &[group_of("deep", 30), names("s-0 t-0")].concat()).await;
    let first = pull(&backend, q, 10, VISIBLE_LONG).await;
    delete(&backend, q, &first).await;
    // deep rejoined the back of the ring: the small groups come first,
    // where SQS would serve deep's next 10 (its head is the oldest).
    let expected = [names("s-0 t-0"), (10..18).map(|i| format!("deep-{i}")).collect()].concat();
    assert_eq!(bodies(&pull(&backend, q, 10, VISIBLE_LONG).await), bodies_of(&expected));
}

async fn at_most_ten_per_receive<B: QueueBackend>(backend: B) {
    for (name, scan) in [("sqs.fifo", GroupScan::default()), ("ring.fifo", GroupScan::RoundRobin)] {
        let config = QueueConfig { group_scan: scan, ..QueueConfig::default() };
        backend.create_queue(name, &config).await.expect("create");
        send(&backend, name, &[group_of("a", 15), group_of("b", 15)].concat()).await;
        let got = pull(&backend, name, 20, VISIBLE_LONG).await;
        assert_eq!(bodies(&got), bodies_of(&group_of("a", 10)), "{scan}");
    }
}

async fn a_ready_group_whose_head_is_deleted_is_filed_by_its_next<B: QueueBackend>(backend: B) {
    let q = queue(&backend, GroupScan::default()).await;
    send(&backend, q, &names("a-0 b-0 a-1")).await;
    let first = pull(&backend, q, 1, VISIBLE_LONG).await;
    assert_eq!(bodies(&first), ["a-0"]);
    // Visible again at once, so a is ready with a-0 at its head, and this
    // receipt is still a-0's latest: the delete takes a ready group's head.
    backend.change_visibility(q, &first[0].receipt, Duration::ZERO).await.expect("visibility");
    delete(&backend, q, &first).await;
    // a's head is a-1 now, younger than b-0.
    assert_eq!(bodies(&pull(&backend, q, 10, VISIBLE_LONG).await), ["b-0", "a-1"]);
}

async fn dead_letter_moves_shift_the_window<B: QueueBackend>(backend: B) {
    backend.create_queue("dlq.fifo", &QueueConfig::default()).await.expect("create the DLQ");
    let config = QueueConfig {
        redrive: Some(RedrivePolicy { dead_letter_queue: "dlq.fifo".into(), max_receive_count: 1 }),
        group_scan: sqs(3),
        ..QueueConfig::default()
    };
    backend.create_queue("q.fifo", &config).await.expect("create");
    send(&backend, "q.fifo", &names("a-0 a-1 b-0 c-0")).await;
    let first = pull(&backend, "q.fifo", 10, Duration::ZERO).await;
    assert_eq!(bodies(&first), ["a-0", "a-1", "b-0"], "c-0 lies beyond the window of 3");
    // Received once each: this receive moves them to the dead-letter
    // queue, which brings c-0 within the window.
    assert_eq!(bodies(&pull(&backend, "q.fifo", 10, VISIBLE_LONG).await), ["c-0"]);
    assert_eq!(bodies(&pull(&backend, "dlq.fifo", 10, VISIBLE_LONG).await), ["a-0", "a-1", "b-0"]);
}

async fn the_scan_is_fixed_at_creation<B: QueueBackend>(backend: B) {
    let q = queue(&backend, GroupScan::RoundRobin).await;
    let again = backend.create_queue(q, &QueueConfig::default()).await;
    assert!(again.unwrap_err().to_string().contains("group scan"));
    assert_eq!(backend.queue_info(q).await.expect("info").config.group_scan, GroupScan::RoundRobin);
    // A standard queue is a ring whatever it is asked for.
    let standard = backend.create_queue("std", &QueueConfig::default()).await.expect("create");
    assert_eq!(standard.config.group_scan, GroupScan::RoundRobin);
    backend.create_queue("std", &QueueConfig::default()).await.expect("the same settings again");
    let zero = QueueConfig { group_scan: sqs(0), ..QueueConfig::default() };
    assert!(backend.create_queue("zero.fifo", &zero).await.is_err());
}

macro_rules! on_both_stores {
    ($($case:ident),* $(,)?) => {
        mod memory {
            use super::*;
            $(
                #[tokio::test]
                async fn $case() {
                    super::$case(MemoryBackend::new()).await;
                }
            )*
        }
        mod redis {
            use super::*;
            $(
                #[tokio::test]
                async fn $case() {
                    let redis = TestRedis::new(concat!("group_scan::", stringify!($case)));
                    super::$case(RedisBackend::new(redis.conn().await, redis.keyspace())).await;
                }
            )*
        }
    };
}

on_both_stores!(
    groups_come_in_the_order_of_their_oldest_message,
    a_group_in_flight_is_skipped,
    a_deep_group_ahead_hides_groups_beyond_the_window,
    a_window_past_the_backlog_sees_every_group,
    round_robin_serves_the_ring,
    at_most_ten_per_receive,
    a_ready_group_whose_head_is_deleted_is_filed_by_its_next,
    dead_letter_moves_shift_the_window,
    the_scan_is_fixed_at_creation,
);
