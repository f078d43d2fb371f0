//! The delay queue cases: SQS standard's semantics as a flush trigger
//! relies on them (a message is not received before its delay; at least
//! once, with receive counts and a dead-letter queue; a long poll wakes
//! for a message coming due), and the sends each kind refuses. Generic over
//! the [`DelayForm`]; `main.rs` runs each against every form. Delays are
//! 1 s: waiting for one to pass is the behaviour under test.

use super::forms::{DelayForm, DelaySpec, Fixture, Spec};
use sluice_domain::queue::{
    DelayedMessage, OutgoingMessage, ReceiveRequest, ReceivedDelayedMessage, SendFailure, SendOutcome,
};
use sluice_domain::{DedupId, DelayQueue, GroupKey, Queue, WorkQueue};
use std::time::Duration;
use tokio::time::Instant;

const SECOND: Duration = Duration::from_secs(1);
/// Clocks differ a little between the test and the store (Redis's TIME,
/// the endpoint's), and SQS rounds to milliseconds.
const CLOCK_SLACK: Duration = Duration::from_millis(50);

async fn send_ok<Q: DelayQueue>(queue: &Q, messages: &[DelayedMessage]) {
    let outcomes = queue.send_delayed_batch(messages).await;
    assert_eq!(outcomes.len(), messages.len());
    for (m, o) in messages.iter().zip(&outcomes) {
        assert!(o.is_ok(), "{} not sent: {o:?}", m.body);
    }
}

async fn receive<Q: DelayQueue>(queue: &Q, visibility: Duration, wait: Duration) -> Vec<ReceivedDelayedMessage> {
    let request = ReceiveRequest::new(10, visibility, wait).expect("request");
    queue.receive(request).await.unwrap_or_else(|e| panic!("receive: {e}"))
}

fn bodies(messages: &[ReceivedDelayedMessage]) -> Vec<&str> {
    let mut bodies: Vec<&str> = messages.iter().map(|m| m.body.as_str()).collect();
    // No order to keep on a standard queue.
    bodies.sort_unstable();
    bodies
}

/// Receives (waiting up to 5 s each time) until `n` messages came, not
/// deleting them; visibility 30 s.
async fn gather<Q: DelayQueue>(queue: &Q, n: usize) -> Vec<ReceivedDelayedMessage> {
    let mut all = Vec::new();
    while all.len() < n {
        let got = receive(queue, 30 * SECOND, 5 * SECOND).await;
        assert!(!got.is_empty(), "only {} of {n} messages arrived: {:?}", all.len(), bodies(&all));
        all.extend(got);
    }
    all
}

pub(crate) async fn a_message_is_not_received_before_its_delay<F: DelayForm>(form: &F) {
    let Fixture { queue, .. } = form.delay_queue(DelaySpec::default()).await;
    let sent = Instant::now();
    send_ok(&queue, &[DelayedMessage::new("late", SECOND), DelayedMessage::new("now", Duration::ZERO)]).await;
    let attrs = queue.attributes().await.expect("attributes");
    assert_eq!((attrs.visible, attrs.delayed), (1, 1), "one waiting, one delayed: {attrs:?}");
    let now = gather(&queue, 1).await;
    assert_eq!(bodies(&now), ["now"]);
    assert!(sent.elapsed() < SECOND, "the undelayed message came at once");
    let late = gather(&queue, 1).await;
    assert_eq!(bodies(&late), ["late"]);
    assert!(sent.elapsed() + CLOCK_SLACK >= SECOND, "received {:?} after the send, before its 1 s", sent.elapsed());
    assert_eq!(late[0].receive_count, 1);
}

pub(crate) async fn a_message_naming_no_delay_takes_the_queue_s<F: DelayForm>(form: &F) {
    let spec = DelaySpec { queue_delay: SECOND, ..DelaySpec::default() };
    let Fixture { queue, .. } = form.delay_queue(spec).await;
    let sent = Instant::now();
    // An explicit 0 is a delay of its own: it overrides the queue's.
    send_ok(&queue, &[DelayedMessage::queue_default("default"), DelayedMessage::new("zero", Duration::ZERO)]).await;
    let first = gather(&queue, 1).await;
    assert_eq!(bodies(&first), ["zero"]);
    assert!(sent.elapsed() < SECOND, "the message with delay 0 came at once");
    let second = gather(&queue, 1).await;
    assert_eq!(bodies(&second), ["default"]);
    assert!(sent.elapsed() + CLOCK_SLACK >= SECOND, "the queue's 1 s delay applied: {:?}", sent.elapsed());
}

pub(crate) async fn messages_are_not_blocked_by_each_other<F: DelayForm>(form: &F) {
    let Fixture { queue, .. } = form.delay_queue(DelaySpec::default()).await;
    let messages: Vec<_> = (0..3).map(|i| DelayedMessage::new(format!("m{i}"), Duration::ZERO)).collect();
    send_ok(&queue, &messages).await;
    // None deleted: all three are in flight at once, no group blocks.
    let got = gather(&queue, 3).await;
    assert_eq!(bodies(&got), ["m0", "m1", "m2"]);
    let attrs = queue.attributes().await.expect("attributes");
    assert_eq!((attrs.visible, attrs.in_flight, attrs.delayed), (0, 3, 0), "{attrs:?}");
}

pub(crate) async fn an_undeleted_message_is_received_again_with_its_count_one_higher<F: DelayForm>(form: &F) {
    let Fixture { queue, .. } = form.delay_queue(DelaySpec::default()).await;
    send_ok(&queue, &[DelayedMessage::new("again", Duration::ZERO)]).await;
    let first = receive(&queue, SECOND, 5 * SECOND).await;
    assert_eq!(bodies(&first), ["again"]);
    assert_eq!(first[0].receive_count, 1);
    assert!(receive(&queue, 30 * SECOND, Duration::ZERO).await.is_empty(), "invisible while in flight");
    // Not deleted: after its 1 s visibility timeout it is received again.
    let second = receive(&queue, 30 * SECOND, 5 * SECOND).await;
    assert_eq!(bodies(&second), ["again"]);
    assert_eq!(second[0].receive_count, 2);
    assert_eq!(second[0].message_id, first[0].message_id);
    assert_eq!(second[0].first_received_at, first[0].first_received_at, "first receipt time is kept");
    // The first receipt is stale; the second one deletes.
    queue.delete(&first[0].receipt).await.expect("a stale delete succeeds");
    queue.delete(&second[0].receipt).await.expect("delete");
    let attrs = queue.attributes().await.expect("attributes");
    assert_eq!((attrs.visible, attrs.in_flight), (0, 0), "{attrs:?}");
}

pub(crate) async fn too_many_receives_move_a_message_to_the_dlq<F: DelayForm>(form: &F) {
    let fixture = form.delay_queue(DelaySpec { max_receive_count: Some(2), ..DelaySpec::default() }).await;
    let (queue, dlq) = (&fixture.queue, fixture.dlq.as_ref().expect("dlq"));
    send_ok(queue, &[DelayedMessage::new("poison", Duration::ZERO)]).await;
    // Received twice, never deleted (visibility 0).
    for expected_count in [1, 2] {
        let got = receive(queue, Duration::ZERO, 5 * SECOND).await;
        assert_eq!(bodies(&got), ["poison"]);
        assert_eq!(got[0].receive_count, expected_count);
    }
    // The next receive moves it to the DLQ and delivers what else there is.
    send_ok(queue, &[DelayedMessage::new("fine", Duration::ZERO)]).await;
    let got = gather(queue, 1).await;
    assert_eq!(bodies(&got), ["fine"]);
    let dead = receive(dlq, 30 * SECOND, 5 * SECOND).await;
    assert_eq!(bodies(&dead), ["poison"]);
}

pub(crate) async fn a_long_poll_wakes_when_a_delayed_message_comes_due<F: DelayForm>(form: &F) {
    let Fixture { queue, .. } = form.delay_queue(DelaySpec::default()).await;
    let sent = Instant::now();
    send_ok(&queue, &[DelayedMessage::new("due", SECOND)]).await;
    // One long poll of 20 s, started before the message is due.
    let got = receive(&queue, 30 * SECOND, 20 * SECOND).await;
    let waited = sent.elapsed();
    assert_eq!(bodies(&got), ["due"]);
    assert!(waited + CLOCK_SLACK >= SECOND, "answered before the delay was over: {waited:?}");
    assert!(waited < 5 * SECOND, "woken when the message came due, not at the wait's end: {waited:?}");
}

fn assert_refused(failure: &SendFailure, names_one_of: &[&str]) {
    assert!(failure.sender_fault, "the sender's fault, not to be retried: {failure:?}");
    assert_eq!(failure.code, "InvalidParameterValue", "{failure:?}");
    assert!(names_one_of.iter().any(|p| failure.message.contains(p)), "names one of {names_one_of:?}: {failure:?}");
}

pub(crate) async fn a_send_of_the_other_kind_fails_with_a_clear_error<F: DelayForm>(form: &F) {
    // A delayed message to a FIFO queue: SQS takes no per-message delay there.
    let fifo = form.queue(Spec::default()).await;
    let outcome = form.delay_port_of(&fifo.queue).send_delayed(&DelayedMessage::new("x", SECOND)).await;
    assert_refused(&outcome.expect_err("a delayed send to a FIFO queue fails"), &["DelaySeconds"]);

    // A FIFO message to a standard queue: no deduplication id there.
    let standard = form.delay_queue(DelaySpec::default()).await;
    let fifo_message = OutgoingMessage::new(GroupKey::parse("g").unwrap(), DedupId::parse("d").unwrap(), "y");
    let outcomes = form.work_port_of(&standard.queue).send_batch(&[fifo_message]).await;
    match &outcomes[..] {
        [SendOutcome::Failed(failure)] => assert_refused(failure, &["MessageDeduplicationId", "MessageGroupId"]),
        other => panic!("a FIFO send to a standard queue fails: {other:?}"),
    }
    // Nothing of either reached a queue.
    assert_eq!(fifo.queue.attributes().await.expect("attributes").visible, 0);
    assert_eq!(standard.queue.attributes().await.expect("attributes").visible, 0);
}
