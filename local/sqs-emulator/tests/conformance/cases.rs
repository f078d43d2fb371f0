//! The cases: SQS FIFO's semantics as the pipeline relies on them. Each is
//! generic over the [`Form`]; `main.rs` runs every case against every form.

use super::forms::{Fixture, Form, Spec};
use sluice_domain::queue::rules::codes;
use sluice_domain::queue::{OutgoingMessage, ReceiveRequest, ReceivedMessage, SendOutcome};
use sluice_domain::{DedupId, GroupKey, Queue, WorkQueue};
use std::time::Duration;

fn message(group: &str, dedup: &str, body: &str) -> OutgoingMessage {
    OutgoingMessage::new(GroupKey::parse(group).unwrap(), DedupId::parse(dedup).unwrap(), body)
}

/// `n` messages of `group`, bodies `<group>-0` .. `<group>-(n-1)`.
fn group_of(group: &str, n: usize) -> Vec<OutgoingMessage> {
    (0..n).map(|i| message(group, &format!("{group}-d{i}"), &format!("{group}-{i}"))).collect()
}

async fn send_ok<Q: WorkQueue>(queue: &Q, messages: &[OutgoingMessage]) {
    let outcomes = queue.send_batch(messages).await;
    assert_eq!(outcomes.len(), messages.len());
    for (m, o) in messages.iter().zip(&outcomes) {
        assert!(o.is_accepted(), "{} not accepted: {o:?}", m.body);
    }
}

async fn receive<Q: WorkQueue>(queue: &Q, max: u8, visibility_s: u64, wait_s: u64) -> Vec<ReceivedMessage> {
    let request =
        ReceiveRequest::new(max, Duration::from_secs(visibility_s), Duration::from_secs(wait_s)).expect("request");
    queue.receive(request).await.unwrap_or_else(|e| panic!("receive: {e}"))
}

async fn delete_all<Q: WorkQueue>(queue: &Q, messages: &[ReceivedMessage]) {
    for m in messages {
        queue.delete(&m.receipt).await.unwrap_or_else(|e| panic!("delete {}: {e}", m.body));
    }
}

fn bodies(messages: &[ReceivedMessage]) -> Vec<&str> {
    messages.iter().map(|m| m.body.as_str()).collect()
}

/// Receives (waiting up to 5 s each time) and deletes until `n` messages
/// came, returning them in receive order.
async fn drain<Q: WorkQueue>(queue: &Q, n: usize) -> Vec<ReceivedMessage> {
    let mut all = Vec::new();
    while all.len() < n {
        let got = receive(queue, 10, 30, 5).await;
        assert!(!got.is_empty(), "only {} of {n} messages arrived: {:?}", all.len(), bodies(&all));
        delete_all(queue, &got).await;
        all.extend(got);
    }
    all
}

pub(crate) async fn one_group_is_delivered_in_order<F: Form>(form: &F) {
    let Fixture { queue, .. } = form.queue(Spec::default()).await;
    let sent = group_of("g", 25);
    send_ok(&queue, &sent).await;
    let got = drain(&queue, 25).await;
    assert_eq!(bodies(&got), sent.iter().map(|m| m.body.as_str()).collect::<Vec<_>>());
    for (m, s) in got.iter().zip(&sent) {
        assert_eq!((&m.group, &m.dedup, m.receive_count), (&s.group, &s.dedup, 1));
    }
}

pub(crate) async fn sequence_numbers_rise_within_a_group<F: Form>(form: &F) {
    let Fixture { queue, .. } = form.queue(Spec::default()).await;
    send_ok(&queue, &group_of("g", 12)).await;
    let got = drain(&queue, 12).await;
    let seqs: Vec<u128> = got.iter().map(|m| m.sequence_number.parse().expect("numeric sequence number")).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "sequence numbers rise: {seqs:?}");
}

pub(crate) async fn a_duplicate_within_the_window_is_accepted_and_not_delivered<F: Form>(form: &F) {
    let Fixture { queue, .. } = form.queue(Spec::default()).await;
    send_ok(&queue, &[message("g", "same", "first")]).await;
    // Same dedup id, other body, and other group: SQS FIFO deduplicates
    // per queue, so two events whose ids collide lose the second one.
    send_ok(&queue, &[message("g", "same", "second"), message("other", "same", "third")]).await;
    let got = receive(&queue, 10, 30, 1).await;
    assert_eq!(bodies(&got), ["first"]);
    delete_all(&queue, &got).await;
    assert!(receive(&queue, 10, 30, 1).await.is_empty());
}

pub(crate) async fn a_dedup_id_is_remembered_after_its_message_is_deleted<F: Form>(form: &F) {
    let Fixture { queue, .. } = form.queue(Spec::default()).await;
    send_ok(&queue, &[message("g", "once", "first")]).await;
    let got = receive(&queue, 10, 30, 1).await;
    assert_eq!(bodies(&got), ["first"]);
    delete_all(&queue, &got).await;
    send_ok(&queue, &[message("g", "once", "again")]).await;
    let got = receive(&queue, 10, 30, 1).await;
    assert!(got.is_empty(), "a deleted message's dedup id was forgotten: {:?}", bodies(&got));
}

pub(crate) async fn a_group_is_blocked_while_a_message_is_in_flight<F: Form>(form: &F) {
    let Fixture { queue, .. } = form.queue(Spec::default()).await;
    send_ok(&queue, &group_of("g", 2)).await;
    let first = receive(&queue, 1, 30, 1).await;
    assert_eq!(bodies(&first), ["g-0"]);
    let blocked = receive(&queue, 10, 30, 1).await;
    assert!(blocked.is_empty(), "g-1 delivered while g-0 in flight: {:?}", bodies(&blocked));
    delete_all(&queue, &first).await;
    assert_eq!(bodies(&receive(&queue, 10, 30, 5).await), ["g-1"]);
}

pub(crate) async fn a_receive_fills_its_batch_group_by_group<F: Form>(form: &F) {
    let Fixture { queue, .. } = form.queue(Spec::default()).await;
    let (a, b) = (group_of("a", 3), group_of("b", 3));
    let interleaved: Vec<_> = a.iter().zip(&b).flat_map(|(x, y)| [x.clone(), y.clone()]).collect();
    send_ok(&queue, &interleaved).await;
    let mut got = Vec::new();
    while got.len() < 6 {
        let batch = receive(&queue, 10, 30, 5).await;
        assert!(!batch.is_empty(), "stalled after {:?}", bodies(&got));
        got.extend(batch);
    }
    let order = bodies(&got);
    let (first, second) = order.split_at(3);
    let expect = |g: &str| (0..3).map(|i| format!("{g}-{i}")).collect::<Vec<_>>();
    assert!(
        (first == expect("a") && second == expect("b")) || (first == expect("b") && second == expect("a")),
        "each group's messages come together and in order: {order:?}"
    );
}

pub(crate) async fn expired_messages_return_to_the_head_of_their_group_in_order<F: Form>(form: &F) {
    let Fixture { queue, .. } = form.queue(Spec::default()).await;
    send_ok(&queue, &group_of("g", 3)).await;
    let first = receive(&queue, 2, 1, 1).await;
    assert_eq!(bodies(&first), ["g-0", "g-1"]);
    // Not deleted: after the 1 s visibility timeout the group is served
    // again from its head (the long poll wakes when they are due).
    let mut again = Vec::new();
    for _ in 0..3 {
        again = receive(&queue, 10, 30, 5).await;
        if !again.is_empty() {
            break;
        }
    }
    assert_eq!(bodies(&again), ["g-0", "g-1", "g-2"]);
    assert_eq!(again.iter().map(|m| m.receive_count).collect::<Vec<_>>(), [2, 2, 1]);
    assert_eq!(again[0].first_received_at, first[0].first_received_at, "first receipt time is kept");
}

pub(crate) async fn a_visibility_change_to_zero_releases_the_group_at_once<F: Form>(form: &F) {
    let Fixture { queue, .. } = form.queue(Spec::default()).await;
    send_ok(&queue, &group_of("g", 2)).await;
    let first = receive(&queue, 1, 30, 1).await;
    queue.change_visibility(&first[0].receipt, Duration::ZERO).await.expect("change visibility");
    let again = receive(&queue, 10, 30, 5).await;
    assert_eq!(bodies(&again), ["g-0", "g-1"]);
    assert_eq!(again[0].receive_count, 2);
}

pub(crate) async fn a_stale_receipt_deletes_nothing<F: Form>(form: &F) {
    let Fixture { queue, .. } = form.queue(Spec::default()).await;
    send_ok(&queue, &group_of("g", 1)).await;
    let first = receive(&queue, 1, 30, 1).await;
    queue.change_visibility(&first[0].receipt, Duration::ZERO).await.expect("change visibility");
    let again = receive(&queue, 1, 30, 5).await;
    assert_eq!(bodies(&again), ["g-0"]);
    // SQS: a delete with an earlier receipt's handle succeeds and deletes
    // nothing; only the latest receipt's handle deletes.
    queue.delete(&first[0].receipt).await.expect("a stale delete succeeds");
    assert_eq!(form_attributes(&queue).await, (0, 1));
    queue.delete(&again[0].receipt).await.expect("delete");
    assert_eq!(form_attributes(&queue).await, (0, 0));
}

async fn form_attributes<Q: WorkQueue>(queue: &Q) -> (u64, u64) {
    let a = queue.attributes().await.unwrap_or_else(|e| panic!("attributes: {e}"));
    (a.visible, a.in_flight)
}

pub(crate) async fn attributes_count_waiting_and_in_flight_messages<F: Form>(form: &F) {
    let Fixture { queue, .. } = form.queue(Spec::default()).await;
    send_ok(&queue, &[group_of("a", 2), group_of("b", 1)].concat()).await;
    assert_eq!(form_attributes(&queue).await, (3, 0));
    let got = receive(&queue, 1, 30, 1).await;
    assert_eq!(form_attributes(&queue).await, (2, 1));
    let attrs = queue.attributes().await.expect("attributes");
    if let Some(age) = attrs.oldest_age {
        assert!(age < Duration::from_secs(60), "{age:?}");
    }
    delete_all(&queue, &got).await;
    assert_eq!(form_attributes(&queue).await, (2, 0));
}

pub(crate) async fn too_many_receives_move_a_message_to_the_dlq_in_group_order<F: Form>(form: &F) {
    let fixture = form.queue(Spec { max_receive_count: Some(2) }).await;
    let (queue, dlq) = (&fixture.queue, fixture.dlq.as_ref().expect("dlq"));
    send_ok(queue, &group_of("g", 3)).await;
    // Receive g-0 and g-1 twice each, never deleting (visibility 0).
    for expected_count in [1, 2] {
        let got = receive(queue, 2, 0, 5).await;
        assert_eq!(bodies(&got), ["g-0", "g-1"]);
        assert!(got.iter().all(|m| m.receive_count == expected_count), "{got:?}");
    }
    // The third receive moves both to the DLQ and goes on with g-2.
    let got = receive(queue, 2, 30, 5).await;
    assert_eq!(bodies(&got), ["g-2"]);
    let dead = receive(dlq, 10, 0, 5).await;
    assert_eq!(bodies(&dead), ["g-0", "g-1"], "the DLQ keeps the group's order");
    assert!(dead.iter().all(|m| m.group.as_str() == "g"));
}

pub(crate) async fn a_redrive_moves_dead_letters_back_in_order<F: Form>(form: &F) {
    let fixture = form.queue(Spec { max_receive_count: Some(1) }).await;
    let queue = &fixture.queue;
    send_ok(queue, &group_of("g", 2)).await;
    assert_eq!(bodies(&receive(queue, 2, 0, 5).await), ["g-0", "g-1"]);
    assert!(receive(queue, 10, 30, 1).await.is_empty(), "both moved to the DLQ");
    form.redrive(&fixture).await;
    let back = drain(queue, 2).await;
    assert_eq!(bodies(&back), ["g-0", "g-1"]);
    assert!(back.iter().all(|m| m.receive_count == 1), "a redriven message starts its count again");
}

/// SQS's *FIFO queue delivery logic* and *Avoid large message backlogs
/// with the same message group ID*: available groups are found by scanning
/// messages in arrival order, so they come in the order of their oldest
/// message, and a group with a message in flight is passed over.
pub(crate) async fn groups_come_in_the_order_of_their_oldest_message<F: Form>(form: &F) {
    let Fixture { queue, .. } = form.queue(Spec::default()).await;
    let order = [message("b", "b0", "b-0"), message("a", "a0", "a-0"), message("c", "c0", "c-0")];
    send_ok(&queue, &[&order[..], &group_of("a", 2)[1..], &group_of("b", 2)[1..]].concat()).await;
    // One at a time, never deleted: each receive passes over the groups
    // already in flight.
    let mut got = Vec::new();
    for _ in 0..3 {
        got.extend(receive(&queue, 1, 30, 5).await);
    }
    assert_eq!(bodies(&got), ["b-0", "a-0", "c-0"]);
    assert!(receive(&queue, 10, 30, 1).await.is_empty(), "every group is in flight");
}

pub(crate) async fn a_deep_group_sent_first_is_served_first<F: Form>(form: &F) {
    let Fixture { queue, .. } = form.queue(Spec::default()).await;
    let deep = group_of("deep", 30);
    send_ok(&queue, &deep).await;
    let small: Vec<_> = (0..5).flat_map(|g| group_of(&format!("s{g}"), 1)).collect();
    send_ok(&queue, &small).await;
    // One consumer that deletes each batch at once: deep's head stays the
    // oldest message, so SQS serves deep until it is empty (one noisy shop
    // delays the rest; the round-robin scan would not, `tests/group_scan.rs`).
    let got = drain(&queue, 35).await;
    let order = bodies(&got);
    if form.scans_as_sqs_fifo() {
        let expected: Vec<&str> = deep.iter().chain(&small).map(|m| m.body.as_str()).collect();
        assert_eq!(order, expected, "deep first, then the small groups by their oldest message");
    } else {
        let last_deep = order.iter().rposition(|b| b.starts_with("deep")).expect("deep served");
        println!("this endpoint served deep's last message at position {last_deep} of 35 (SQS FIFO: 29)");
    }
}

pub(crate) async fn per_entry_failures_are_reported_and_halt_their_group<F: Form>(form: &F) {
    let Fixture { queue, .. } = form.queue(Spec::default()).await;
    let batch = [
        message("a", "a0", "fine"),
        message("a", "a1", "bad\u{1}"),
        message("a", "a2", "after"),
        message("b", "b0", "other"),
    ];
    let outcomes = queue.send_batch(&batch).await;
    let codes: Vec<&str> = outcomes
        .iter()
        .map(|o| match o {
            SendOutcome::Accepted(_) => "ok",
            SendOutcome::Failed(f) => f.code.as_str(),
        })
        .collect();
    assert_eq!(codes, ["ok", "InvalidMessageContents", codes::GROUP_HALTED, "ok"]);
    let got = drain(&queue, 2).await;
    let mut got = bodies(&got);
    got.sort_unstable();
    assert_eq!(got, ["fine", "other"]);
}
