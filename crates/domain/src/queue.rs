//! The queue ports: what sluice needs from a FIFO queue ([`WorkQueue`]),
//! whether that is SQS FIFO in AWS (`sluice-aws`) or the embedded queue of
//! `sluice dev` (`sluice-sqs-emulator`), and from a delay queue ([`DelayQueue`],
//! in [`delay`]: SQS standard with per-message delays, for triggers); both
//! are a [`Queue`] (delete, change visibility, attributes). No I/O here: the traits, the message types, SQS's rules (defined once, in
//! [`rules`]) and the batching rule (in [`batching`]), which every
//! implementation inherits instead of writing its own.
//!
//! What a [`WorkQueue`] promises is SQS FIFO's contract: a deduplication
//! id is remembered for five minutes after its send; one group is served in
//! order and blocked while any of its messages is in flight; a message not
//! deleted before its visibility timeout returns to the head of its group.
//! `local/sqs-emulator/tests/conformance` checks every implementation against it.

pub mod batching;
pub mod delay;
mod message;
#[cfg(test)]
mod recorder;
pub mod rules;

pub use delay::{DelayQueue, DelayedMessage, DelayedOutcome, ReceivedDelayedMessage};

pub use message::{
    Accepted, EXECUTION_INPUT_LIMIT, MAX_MESSAGE_BYTES, MessageId, OutgoingMessage, PIPE_BATCH_SIZE, QueueAttributes,
    RECORD_ENVELOPE_BYTES, ReceiptHandle, ReceiveRequest, ReceivedMessage, SendFailure, SendOutcome,
};

use std::future::Future;
use std::time::Duration;

/// What every queue does, FIFO ([`WorkQueue`]) or delay ([`DelayQueue`]):
/// settle a received message by its receipt, and tell what it holds.
pub trait Queue: Send + Sync {
    /// Why a whole call failed (the queue could not be reached, or refused
    /// the request as a whole). Per-entry failures are [`SendFailure`]s.
    type Error: std::error::Error + Send + Sync + 'static;

    /// Deletes a received message. Deleting a message that is already gone
    /// succeeds; in a FIFO queue its deduplication id stays remembered for
    /// the rest of its five minutes.
    fn delete(&self, receipt: &ReceiptHandle) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Sets how long a received message stays invisible, counted from now
    /// (zero makes it receivable at once; in a FIFO queue, at the head of
    /// its group).
    fn change_visibility(
        &self,
        receipt: &ReceiptHandle,
        timeout: Duration,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Waiting, in-flight and delayed messages, and (where the queue can
    /// tell) the age of the oldest.
    fn attributes(&self) -> impl Future<Output = Result<QueueAttributes, Self::Error>> + Send;
}

/// One FIFO queue, as the pipeline uses it.
///
/// Implementors provide [`send_call`](WorkQueue::send_call), one SQS
/// `SendMessageBatch`-sized call; callers use
/// [`send_batch`](WorkQueue::send_batch), which checks every entry, splits
/// any number of messages into such calls and reports one outcome per entry.
pub trait WorkQueue: Queue {
    /// Sends at most [`rules::MAX_BATCH_ENTRIES`] messages whose bodies add
    /// up to at most [`rules::MAX_PAYLOAD_BYTES`], each already checked
    /// with [`rules::check_message`], in one call. Returns one outcome per
    /// entry, in input order. Messages of one group are enqueued in the
    /// order given. An entry the queue did not accept is never reported
    /// [`SendOutcome::Accepted`].
    fn send_call(
        &self,
        entries: &[&OutgoingMessage],
    ) -> impl Future<Output = Result<Vec<SendOutcome>, Self::Error>> + Send;

    /// Sends any number of messages: see [`batching::send_batch`]. Returns
    /// exactly one outcome per entry, in input order; nothing is hidden.
    fn send_batch(&self, entries: &[OutgoingMessage]) -> impl Future<Output = Vec<SendOutcome>> + Send
    where
        Self: Sized,
    {
        batching::send_batch(self, entries)
    }

    /// Receives up to `request.max_messages` messages, waiting up to
    /// `request.wait` for the first one. Each is invisible to other
    /// receivers for `request.visibility_timeout`, and its group is blocked
    /// until it is deleted or becomes visible again.
    fn receive(
        &self,
        request: ReceiveRequest,
    ) -> impl Future<Output = Result<Vec<ReceivedMessage>, Self::Error>> + Send;
}
