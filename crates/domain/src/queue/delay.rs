//! The delay queue port: "deliver this in D seconds" (0 to 15 minutes),
//! with no order and no deduplication. In AWS it is an SQS *standard*
//! queue with a per-message `DelaySeconds` (`sluice-aws`'s
//! `SqsDelayQueue`); locally, a standard queue of the embedded queue
//! (`sluice-sqs-emulator`'s `EmbeddedDelayQueue`), also reachable through its SQS
//! endpoint with that very adapter. It is what a trigger that must not poll
//! is built on: a flush due later is a message that becomes receivable
//! then.
//!
//! A port of its own, not a field of [`OutgoingMessage`](super::OutgoingMessage):
//! SQS refuses a per-message `DelaySeconds` on FIFO queues (only a
//! queue-wide delay exists there), and a standard queue has no group or
//! deduplication id, so neither type would be honest about the other.
//!
//! What an implementation promises (SQS standard's contract, as much of
//! it as a trigger needs; `local/sqs-emulator/tests/conformance` checks it):
//!
//! - a message is not received before its delay is over: its own, or the
//!   queue's `DelaySeconds` when it names none;
//! - at least once: a received message that is not deleted before its
//!   visibility timeout ends is received again, its receive count one
//!   higher; with a redrive policy it moves to the (standard) dead-letter
//!   queue once received `maxReceiveCount` times;
//! - no order, and no blocking: any number of messages may be in flight at
//!   once. SQS may also, rarely, deliver a message twice, so a consumer
//!   must be idempotent.

use super::Queue;
use super::message::{MessageId, ReceiptHandle, ReceiveRequest, ReceivedMessage, SendFailure};
use super::rules::{self, MAX_BATCH_ENTRIES, MAX_PAYLOAD_BYTES, codes};
use std::future::Future;
use std::time::{Duration, SystemTime};

/// A message for a delay queue: its body, and how long after its send it
/// becomes receivable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DelayedMessage {
    pub body: String,
    /// `DelaySeconds`: whole seconds, at most [`rules::MAX_DELAY`]. `None`
    /// takes the queue's own `DelaySeconds` (0 unless the queue sets one).
    pub delay: Option<Duration>,
}

impl DelayedMessage {
    /// A message receivable `delay` after its send, whatever the queue's
    /// own delay.
    pub fn new(body: impl Into<String>, delay: Duration) -> Self {
        Self { body: body.into(), delay: Some(delay) }
    }

    /// A message delayed by the queue's `DelaySeconds`.
    pub fn queue_default(body: impl Into<String>) -> Self {
        Self { body: body.into(), delay: None }
    }
}

/// What became of one delayed message: the id the queue gave it, or why it
/// was not enqueued.
pub type DelayedOutcome = Result<MessageId, SendFailure>;

/// A message received from a delay queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceivedDelayedMessage {
    pub message_id: MessageId,
    pub receipt: ReceiptHandle,
    pub body: String,
    /// `ApproximateReceiveCount`: 1 on the first receipt.
    pub receive_count: u32,
    /// `SentTimestamp` (the send, not the end of the delay).
    pub sent_at: SystemTime,
    /// `ApproximateFirstReceiveTimestamp`.
    pub first_received_at: SystemTime,
}

/// A FIFO message as any queue kind's: its group, deduplication id and
/// sequence number left out (what an SQS event record holds of every
/// message, whichever queue it came from).
impl From<&ReceivedMessage> for ReceivedDelayedMessage {
    fn from(m: &ReceivedMessage) -> Self {
        Self {
            message_id: m.message_id.clone(),
            receipt: m.receipt.clone(),
            body: m.body.clone(),
            receive_count: m.receive_count,
            sent_at: m.sent_at,
            first_received_at: m.first_received_at,
        }
    }
}

/// One delay queue, as sluice uses it.
///
/// Implementors provide [`send_delayed_call`](DelayQueue::send_delayed_call),
/// one SQS `SendMessageBatch`-sized call; callers use
/// [`send_delayed`](DelayQueue::send_delayed) for one message and
/// [`send_delayed_batch`](DelayQueue::send_delayed_batch) for any number.
pub trait DelayQueue: Queue {
    /// Sends at most [`rules::MAX_BATCH_ENTRIES`] messages whose bodies add
    /// up to at most [`rules::MAX_PAYLOAD_BYTES`], each already checked
    /// with [`rules::check_delayed`], in one call. Returns one outcome per
    /// entry, in input order; an entry the queue did not accept is never
    /// reported `Ok`.
    fn send_delayed_call(
        &self,
        entries: &[&DelayedMessage],
    ) -> impl Future<Output = Result<Vec<DelayedOutcome>, Self::Error>> + Send;

    /// Sends one message. A message that breaks a rule fails before any
    /// call; a failed call is a [`codes::CALL_FAILED`] failure naming the
    /// error, not sender-fault, so the caller may try again.
    fn send_delayed(&self, message: &DelayedMessage) -> impl Future<Output = DelayedOutcome> + Send
    where
        Self: Sized,
    {
        send_one(self, message)
    }

    /// Sends any number of messages: each is checked, the valid ones go
    /// out in calls of at most ten entries and 1 MiB. Returns exactly one
    /// outcome per entry, in input order. There is no order to keep, so a
    /// failure stops nothing else.
    fn send_delayed_batch(&self, entries: &[DelayedMessage]) -> impl Future<Output = Vec<DelayedOutcome>> + Send
    where
        Self: Sized,
    {
        send_batch(self, entries)
    }

    /// Receives up to `request.max_messages` messages whose delay is over,
    /// waiting up to `request.wait` for the first one. Each is invisible to
    /// other receivers for `request.visibility_timeout`.
    fn receive(
        &self,
        request: ReceiveRequest,
    ) -> impl Future<Output = Result<Vec<ReceivedDelayedMessage>, Self::Error>> + Send;
}

fn call_failed(message: String) -> SendFailure {
    SendFailure::new(codes::CALL_FAILED, message, false)
}

async fn send_one<Q: DelayQueue + ?Sized>(queue: &Q, message: &DelayedMessage) -> DelayedOutcome {
    rules::check_delayed(message)?;
    match queue.send_delayed_call(&[message]).await {
        Ok(outcomes) if outcomes.len() == 1 => outcomes.into_iter().next().unwrap_or_else(|| unreachable!()),
        Ok(outcomes) => Err(call_failed(format!("the queue answered {} outcomes for 1 entry", outcomes.len()))),
        Err(error) => Err(call_failed(format!("the send call failed: {error}"))),
    }
}

async fn send_batch<Q: DelayQueue + ?Sized>(queue: &Q, entries: &[DelayedMessage]) -> Vec<DelayedOutcome> {
    let mut outcomes: Vec<Option<DelayedOutcome>> = vec![None; entries.len()];
    let mut call: Vec<usize> = Vec::with_capacity(MAX_BATCH_ENTRIES);
    let mut call_bytes = 0;
    for (i, entry) in entries.iter().enumerate() {
        if let Err(violation) = rules::check_delayed(entry) {
            outcomes[i] = Some(Err(violation.into()));
            continue;
        }
        if call.len() == MAX_BATCH_ENTRIES || call_bytes + entry.body.len() > MAX_PAYLOAD_BYTES {
            send_call(queue, entries, &call, &mut outcomes).await;
            call.clear();
            call_bytes = 0;
        }
        call.push(i);
        call_bytes += entry.body.len();
    }
    if !call.is_empty() {
        send_call(queue, entries, &call, &mut outcomes).await;
    }
    outcomes
        .into_iter()
        .map(|outcome| outcome.unwrap_or_else(|| Err(call_failed("entry was not attempted".into()))))
        .collect()
}

async fn send_call<Q: DelayQueue + ?Sized>(
    queue: &Q,
    entries: &[DelayedMessage],
    call: &[usize],
    outcomes: &mut [Option<DelayedOutcome>],
) {
    let batch: Vec<&DelayedMessage> = call.iter().map(|&i| &entries[i]).collect();
    let failure = match queue.send_delayed_call(&batch).await {
        Ok(answers) if answers.len() == call.len() => {
            for (&i, answer) in call.iter().zip(answers) {
                outcomes[i] = Some(answer);
            }
            return;
        }
        Ok(answers) => format!("the queue answered {} outcomes for {} entries", answers.len(), call.len()),
        Err(error) => format!("the send call failed: {error}"),
    };
    for &i in call {
        outcomes[i] = Some(Err(call_failed(failure.clone())));
    }
}

/// Sends `body` to arrive after `delay`, in whole seconds rounded up (SQS
/// takes no fractions, and a request must never come early), capped at
/// [`rules::MAX_DELAY`]. A refusal of the message itself is
/// `Sluice.Internal`; an unreachable queue `Sluice.UpstreamUnavailable`,
/// which a caller may retry.
pub async fn send_after<Q: DelayQueue>(
    queue: &Q,
    body: String,
    delay: Duration,
    what: &str,
) -> Result<(), crate::StepError> {
    let seconds = delay.min(rules::MAX_DELAY).as_secs_f64().ceil() as u64;
    let message = DelayedMessage::new(body, Duration::from_secs(seconds));
    match queue.send_delayed(&message).await {
        Ok(_) => Ok(()),
        Err(failure) => {
            let kind =
                if failure.sender_fault { crate::ErrorKind::Internal } else { crate::ErrorKind::UpstreamUnavailable };
            Err(crate::StepError::new(kind, format!("{what} was not queued: {}: {}", failure.code, failure.message)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::recorder::{Recorder, now};

    fn codes_of(outcomes: &[DelayedOutcome]) -> Vec<String> {
        outcomes.iter().map(|o| o.as_ref().map_or_else(|f| f.code.clone(), |_| "ok".into())).collect()
    }

    #[test]
    fn one_message_goes_out_with_its_delay_and_comes_back_with_its_id() {
        let queue = Recorder::default();
        let id = now(queue.send_delayed(&DelayedMessage::new("flush s1", Duration::from_secs(7)))).unwrap();
        assert_eq!(id.as_str(), "id-flush s1");
        let calls = queue.calls();
        assert_eq!(calls, [vec![("flush s1".to_owned(), Some(Duration::from_secs(7)))]]);
        now(queue.send_delayed(&DelayedMessage::queue_default("default"))).unwrap();
        assert_eq!(queue.calls()[1][0].1, None, "no delay named: the queue's applies");
    }

    #[test]
    fn a_bad_delay_fails_before_any_call_and_a_failed_call_is_retryable() {
        let queue = Recorder::default();
        let err = now(queue.send_delayed(&DelayedMessage::new("x", Duration::from_secs(901)))).unwrap_err();
        assert!(err.sender_fault && err.code == "InvalidParameterValue" && err.message.contains("DelaySeconds"));
        assert!(queue.calls().is_empty());
        let err = now(queue.send_delayed(&DelayedMessage::new("down", Duration::ZERO))).unwrap_err();
        assert_eq!(err.code, codes::CALL_FAILED);
        assert!(!err.sender_fault && err.to_string().contains("queue unreachable"), "{err}");
    }

    #[test]
    fn a_batch_goes_out_in_calls_of_ten_and_a_failure_stops_nothing_else() {
        let queue = Recorder::default();
        let mut entries: Vec<_> =
            (0..23).map(|i| DelayedMessage::new(format!("m{i}"), Duration::from_secs(1))).collect();
        entries[3] = DelayedMessage::new("fail-3", Duration::ZERO);
        entries[4] = DelayedMessage::new("bad", Duration::from_millis(10));
        let outcomes = now(queue.send_delayed_batch(&entries));
        let codes = codes_of(&outcomes);
        assert_eq!(&codes[3..5], ["InternalError", "InvalidParameterValue"]);
        assert!(codes.iter().enumerate().all(|(i, c)| i == 3 || i == 4 || c == "ok"), "{codes:?}");
        let calls = queue.calls();
        assert_eq!(calls.iter().map(Vec::len).collect::<Vec<_>>(), [10, 10, 2], "the invalid entry is not sent");
    }

    #[test]
    fn a_failed_call_fails_each_of_its_entries_and_later_calls_still_run() {
        let queue = Recorder::default();
        let mut entries: Vec<_> = (0..10).map(|i| DelayedMessage::queue_default(format!("m{i}"))).collect();
        entries[9] = DelayedMessage::queue_default("down");
        entries.push(DelayedMessage::queue_default("after"));
        let codes = codes_of(&now(queue.send_delayed_batch(&entries)));
        assert!(codes[..10].iter().all(|c| c == codes::CALL_FAILED), "{codes:?}");
        assert_eq!(codes[10], "ok");
    }

    #[test]
    fn calls_are_also_cut_at_one_mib() {
        let queue = Recorder::default();
        let big = "x".repeat(MAX_PAYLOAD_BYTES / 2);
        let entries: Vec<_> = (0..3).map(|i| DelayedMessage::queue_default(format!("{i}{big}"))).collect();
        assert!(now(queue.send_delayed_batch(&entries)).iter().all(Result::is_ok));
        assert_eq!(queue.calls().iter().map(Vec::len).collect::<Vec<_>>(), [1, 1, 1]);
    }
}
