//! The [`DelayQueue`] port over a standard queue of a [`QueueBackend`],
//! with the same long polling as [`crate::EmbeddedQueue`] (a long poll
//! wakes when the earliest delayed message is due, as it does for an
//! in-flight one).

use crate::backend::QueueBackend;
use crate::config::QueueKind;
use crate::embedded::{EmbeddedQueue, long_poll};
use crate::error::QueueError;
use crate::validation;
use sluice_domain::queue::{
    DelayedMessage, DelayedOutcome, QueueAttributes, ReceiptHandle, ReceiveRequest, ReceivedDelayedMessage,
    ReceivedMessage,
};
use sluice_domain::{DelayQueue, Queue};
use std::time::Duration;

/// One standard queue of a backend, as a [`DelayQueue`]. It wraps an
/// [`EmbeddedQueue`] of the same name because deleting, changing
/// visibility and counting are the same backend calls on a FIFO and a
/// standard queue; only sending and receiving differ.
#[derive(Debug, Clone)]
pub struct EmbeddedDelayQueue<B>(EmbeddedQueue<B>);

impl<B: QueueBackend> EmbeddedDelayQueue<B> {
    /// The standard queue `name` of `backend`; it is not checked to exist
    /// (or to be standard) until used.
    pub fn new(backend: B, name: impl Into<String>) -> Self {
        Self(EmbeddedQueue::new(backend, name))
    }

    pub fn name(&self) -> &str {
        self.0.name()
    }

    pub fn backend(&self) -> &B {
        self.0.backend()
    }
}

impl<B: QueueBackend> DelayQueue for EmbeddedDelayQueue<B> {
    async fn send_delayed_call(&self, entries: &[&DelayedMessage]) -> Result<Vec<DelayedOutcome>, QueueError> {
        match self.backend().send_delayed(self.name(), entries).await {
            Ok(ids) => Ok(ids.into_iter().map(Ok).collect()),
            // A FIFO queue: every entry is refused, as SQS refuses them.
            Err(err) => match err.entry_failure() {
                Some(failure) => Ok(entries.iter().map(|_| Err(failure.clone())).collect()),
                None => Err(err),
            },
        }
    }

    async fn receive(&self, request: ReceiveRequest) -> Result<Vec<ReceivedDelayedMessage>, QueueError> {
        validation::check_kind(self.name(), QueueKind::Standard)?;
        let (max, visibility, wait) = (request.max_messages(), request.visibility_timeout(), request.wait());
        let messages = long_poll(self.backend(), self.name(), max, visibility, wait, None, None).await?;
        Ok(messages.into_iter().map(delayed).collect())
    }
}

impl<B: QueueBackend> Queue for EmbeddedDelayQueue<B> {
    type Error = QueueError;

    async fn delete(&self, receipt: &ReceiptHandle) -> Result<(), QueueError> {
        self.0.delete(receipt).await
    }

    async fn change_visibility(&self, receipt: &ReceiptHandle, timeout: Duration) -> Result<(), QueueError> {
        self.0.change_visibility(receipt, timeout).await
    }

    async fn attributes(&self) -> Result<QueueAttributes, QueueError> {
        self.0.attributes().await
    }
}

/// A standard queue's message without the group and deduplication id the
/// store gives it internally (its message id).
fn delayed(message: ReceivedMessage) -> ReceivedDelayedMessage {
    ReceivedDelayedMessage {
        message_id: message.message_id,
        receipt: message.receipt,
        body: message.body,
        receive_count: message.receive_count,
        sent_at: message.sent_at,
        first_received_at: message.first_received_at,
    }
}
