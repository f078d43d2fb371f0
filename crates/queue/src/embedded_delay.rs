//! The [`DelayQueue`] port over a standard queue of a [`QueueBackend`],
//! with the same long polling as [`crate::EmbeddedQueue`] (a long poll
//! wakes when the earliest delayed message is due, as it does for an
//! in-flight one).

use crate::backend::QueueBackend;
use crate::config::QueueKind;
use crate::embedded::long_poll;
use crate::error::QueueError;
use crate::validation;
use sluice_domain::DelayQueue;
use sluice_domain::queue::{
    DelayedMessage, DelayedOutcome, QueueAttributes, ReceiptHandle, ReceiveRequest, ReceivedDelayedMessage,
    ReceivedMessage,
};
use std::time::Duration;

/// One standard queue of a backend, as a [`DelayQueue`].
#[derive(Debug, Clone)]
pub struct EmbeddedDelayQueue<B> {
    backend: B,
    name: String,
}

impl<B: QueueBackend> EmbeddedDelayQueue<B> {
    /// The standard queue `name` of `backend`; it is not checked to exist
    /// (or to be standard) until used.
    pub fn new(backend: B, name: impl Into<String>) -> Self {
        Self { backend, name: name.into() }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn backend(&self) -> &B {
        &self.backend
    }
}

impl<B: QueueBackend> DelayQueue for EmbeddedDelayQueue<B> {
    type Error = QueueError;

    async fn send_delayed_call(&self, entries: &[&DelayedMessage]) -> Result<Vec<DelayedOutcome>, QueueError> {
        match self.backend.send_delayed(&self.name, entries).await {
            Ok(ids) => Ok(ids.into_iter().map(Ok).collect()),
            // A FIFO queue: every entry is refused, as SQS refuses them.
            Err(err) => match err.entry_failure() {
                Some(failure) => Ok(entries.iter().map(|_| Err(failure.clone())).collect()),
                None => Err(err),
            },
        }
    }

    async fn receive(&self, request: ReceiveRequest) -> Result<Vec<ReceivedDelayedMessage>, QueueError> {
        validation::check_kind(&self.name, QueueKind::Standard)?;
        let (max, visibility, wait) = (request.max_messages(), request.visibility_timeout(), request.wait());
        let messages = long_poll(&self.backend, &self.name, max, visibility, wait, None).await?;
        Ok(messages.into_iter().map(delayed).collect())
    }

    async fn delete(&self, receipt: &ReceiptHandle) -> Result<(), QueueError> {
        self.backend.delete_message(&self.name, receipt).await
    }

    async fn change_visibility(&self, receipt: &ReceiptHandle, timeout: Duration) -> Result<(), QueueError> {
        sluice_domain::queue::rules::check_visibility_timeout(timeout)?;
        self.backend.change_visibility(&self.name, receipt, timeout).await
    }

    async fn attributes(&self) -> Result<QueueAttributes, QueueError> {
        self.backend.attributes(&self.name).await
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
