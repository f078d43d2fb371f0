//! The store behind the embedded queue: what both the in-memory and the
//! Redis store implement. It is the whole of what the SQS endpoint needs
//! (queues, messages, redrive); [`crate::EmbeddedQueue`] puts the
//! [`WorkQueue`](sluice_domain::WorkQueue) port and long polling on top,
//! [`crate::EmbeddedDelayQueue`] the [`DelayQueue`](sluice_domain::DelayQueue)
//! port.
//!
//! Both kinds of queue live in one store and share every operation but
//! the send: [`QueueBackend::send`] for FIFO queues, and
//! [`QueueBackend::send_delayed`] for standard queues, where each message
//! is a group of its own (named by its message id) that starts blocked
//! until its delay is over (see the crate root).
//!
//! Every operation is atomic and none waits: [`QueueBackend::pull`] answers
//! at once, with how long until an in-flight message becomes visible, and
//! long polling is built once on top of that and of [`QueueBackend::signal`].

use crate::config::QueueConfig;
use crate::error::QueueError;
use crate::receive_attempt::ReceiveAttemptId;
use sluice_domain::queue::{
    Accepted, DelayedMessage, MessageId, OutgoingMessage, QueueAttributes, ReceiptHandle, ReceivedMessage,
};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::sync::Notify;

/// A queue as the store knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueInfo {
    pub name: String,
    pub config: QueueConfig,
    pub created_at: SystemTime,
    /// Drawn at creation; receipt handles carry it.
    pub(crate) incarnation: u64,
}

/// The answer of a pull: the messages, and when the earliest in-flight or
/// delayed message becomes visible (so a long poll can wake up for it).
/// A standard queue's messages carry their message id as group and
/// deduplication id; the delay queue port and the SQS endpoint drop both.
#[derive(Debug, Clone, Default)]
pub struct Pulled {
    pub messages: Vec<ReceivedMessage>,
    pub next_visible_in: Option<Duration>,
}

pub trait QueueBackend: Clone + Send + Sync + 'static {
    /// Creates a queue, or returns the existing one when its settings are
    /// the same; different settings are [`QueueError::QueueNameExists`].
    /// A redrive policy's dead-letter queue must exist.
    fn create_queue(
        &self,
        name: &str,
        config: &QueueConfig,
    ) -> impl Future<Output = Result<QueueInfo, QueueError>> + Send;

    fn queue_info(&self, name: &str) -> impl Future<Output = Result<QueueInfo, QueueError>> + Send;

    /// Every queue's name, sorted.
    fn list_queues(&self) -> impl Future<Output = Result<Vec<String>, QueueError>> + Send;

    /// Deletes a queue and every message in it.
    fn delete_queue(&self, name: &str) -> impl Future<Output = Result<(), QueueError>> + Send;

    /// Deletes every message of a queue. Deduplication ids stay remembered
    /// for the rest of their five minutes, as they do after a delete.
    fn purge_queue(&self, name: &str) -> impl Future<Output = Result<(), QueueError>> + Send;

    /// Enqueues messages already checked against SQS's rules on a FIFO
    /// queue, in order. A message whose deduplication id was sent in the
    /// last five minutes is accepted and not enqueued; its answer is the
    /// first one's. A standard queue refuses with
    /// [`QueueError::WrongKind`].
    fn send(
        &self,
        name: &str,
        entries: &[&OutgoingMessage],
    ) -> impl Future<Output = Result<Vec<Accepted>, QueueError>> + Send;

    /// Enqueues messages already checked against SQS's rules
    /// ([`rules::check_delayed`]) on a standard queue. Each becomes visible
    /// after its delay, or the queue's `DelaySeconds` when it names none.
    /// Returns each one's new message id, in order. A FIFO queue refuses
    /// with [`QueueError::WrongKind`].
    ///
    /// [`rules::check_delayed`]: sluice_domain::queue::rules::check_delayed
    fn send_delayed(
        &self,
        name: &str,
        entries: &[&DelayedMessage],
    ) -> impl Future<Output = Result<Vec<MessageId>, QueueError>> + Send;

    /// Takes up to `max` (at most ten) visible messages without waiting:
    /// the whole head of the first ready group, then the next group's, and
    /// so on, the groups chosen by the queue's
    /// [`GroupScan`](crate::GroupScan) (oldest head first within the
    /// window, or round-robin). Each becomes invisible for `visibility` and
    /// blocks its group.
    fn pull(
        &self,
        name: &str,
        max: u8,
        visibility: Duration,
    ) -> impl Future<Output = Result<Pulled, QueueError>> + Send {
        self.pull_attempt(name, max, visibility, None)
    }

    /// [`pull`](Self::pull) as the receive attempt `attempt`, remembered
    /// per queue for five minutes once it took messages: the same attempt
    /// again answers those messages with the same receipts, their
    /// visibility reset to `visibility` from now, and takes no more; or
    /// [`QueueError::AttemptNotRetryable`] once any of them was deleted,
    /// changed or received since (the rules: [`crate::receive_attempt`]).
    fn pull_attempt(
        &self,
        name: &str,
        max: u8,
        visibility: Duration,
        attempt: Option<&ReceiveAttemptId>,
    ) -> impl Future<Output = Result<Pulled, QueueError>> + Send;

    /// Deletes a received message. A message already deleted, or a handle of
    /// an earlier receipt of a message received again since, succeeds and
    /// deletes nothing (as SQS).
    fn delete_message(
        &self,
        name: &str,
        receipt: &ReceiptHandle,
    ) -> impl Future<Output = Result<(), QueueError>> + Send;

    /// Sets how long a message in flight stays invisible, from now.
    fn change_visibility(
        &self,
        name: &str,
        receipt: &ReceiptHandle,
        timeout: Duration,
    ) -> impl Future<Output = Result<(), QueueError>> + Send;

    fn attributes(&self, name: &str) -> impl Future<Output = Result<QueueAttributes, QueueError>> + Send;

    /// Redrive: moves every message of `from` whose group has nothing in
    /// flight to the tail of its group in `to`, in the order they arrived in
    /// `from`, as if newly sent (receive count 0, no deduplication, no
    /// delay). With `only_from = Some(q)`, moves only messages that `q`
    /// moved to `from` as its dead-letter queue. Both queues must be of one
    /// kind. Returns how many moved.
    fn move_messages(
        &self,
        from: &str,
        to: &str,
        only_from: Option<&str>,
    ) -> impl Future<Output = Result<u64, QueueError>> + Send;

    /// Notified after every change that can make a message receivable in
    /// this process (a send, a visibility change, a redrive), so that long
    /// polls wake at once. (A delay ending is no change: a pull says when
    /// the next one ends, and a long poll wakes for it.)
    fn signal(&self) -> &Arc<Notify>;
}
