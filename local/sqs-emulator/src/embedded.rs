//! The [`WorkQueue`] port over a [`QueueBackend`], and long polling.
//!
//! A long poll must not spin on Redis. It pulls once; when that finds
//! nothing it sleeps until the first of: the backend's [`signal`] (a send,
//! a visibility change or a redrive in this process), the moment the
//! earliest in-flight message becomes visible again (the pull says when),
//! a poll timer, or the end of the wait. The poll timer only matters for
//! messages another process sends to the same Redis; it starts at 25 ms
//! and doubles up to 1 s, so an idle 20 s long poll costs about 25 pulls,
//! and a message from another process is seen within a second.
//!
//! [`signal`]: QueueBackend::signal

use crate::backend::QueueBackend;
use crate::config::QueueKind;
use crate::error::QueueError;
use crate::receive_attempt::ReceiveAttemptId;
use crate::validation;
use sluice_domain::queue::{
    OutgoingMessage, QueueAttributes, ReceiptHandle, ReceiveRequest, ReceivedMessage, SendOutcome,
};
use sluice_domain::{Queue, WorkQueue};
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

const FIRST_POLL: Duration = Duration::from_millis(25);
const LONGEST_POLL: Duration = Duration::from_secs(1);

/// One FIFO queue of a backend, as a [`WorkQueue`].
#[derive(Debug, Clone)]
pub struct EmbeddedQueue<B> {
    backend: B,
    name: String,
}

impl<B: QueueBackend> EmbeddedQueue<B> {
    /// The queue `name` of `backend`; it is not checked to exist until used.
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

/// Pulls up to `max` messages, waiting up to `wait` for the first (less if
/// `stop` is cancelled meanwhile: a server shutting down answers its long
/// polls with what they have instead of holding them for 20 s), as the
/// receive attempt `attempt` if given (an attempt is remembered only once
/// it took messages, so each empty pull of the wait leaves the next free
/// to take). Only the waiting is cut short: a pull that ran is always
/// answered, so nothing it took is lost.
pub async fn long_poll<B: QueueBackend>(
    backend: &B,
    name: &str,
    max: u8,
    visibility: Duration,
    wait: Duration,
    attempt: Option<&ReceiveAttemptId>,
    stop: Option<&CancellationToken>,
) -> Result<Vec<ReceivedMessage>, QueueError> {
    let deadline = Instant::now() + wait;
    let mut poll = FIRST_POLL;
    let never = CancellationToken::new();
    let stop = stop.unwrap_or(&never);
    loop {
        // Register for the signal before pulling, so a send between the
        // pull and the sleep still wakes us (a cancelled token stays so).
        let signal = backend.signal().clone();
        let notified = signal.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let pulled = backend.pull_attempt(name, max, visibility, attempt).await?;
        let now = Instant::now();
        if !pulled.messages.is_empty() || now >= deadline || stop.is_cancelled() {
            return Ok(pulled.messages);
        }
        let mut nap = poll.min(deadline - now);
        if let Some(next) = pulled.next_visible_in {
            // Wake just after the earliest in-flight message is due back.
            nap = nap.min(next + Duration::from_millis(1));
        }
        tokio::select! {
            () = &mut notified => {}
            () = stop.cancelled() => {}
            () = tokio::time::sleep(nap) => poll = (poll * 2).min(LONGEST_POLL),
        }
    }
}

impl<B: QueueBackend> WorkQueue for EmbeddedQueue<B> {
    async fn send_call(&self, entries: &[&OutgoingMessage]) -> Result<Vec<SendOutcome>, QueueError> {
        match self.backend.send(&self.name, entries).await {
            Ok(accepted) => Ok(accepted.into_iter().map(SendOutcome::Accepted).collect()),
            // A standard queue: every entry is refused, as SQS refuses them.
            Err(err) => match err.entry_failure() {
                Some(failure) => Ok(entries.iter().map(|_| SendOutcome::Failed(failure.clone())).collect()),
                None => Err(err),
            },
        }
    }

    async fn receive(&self, request: ReceiveRequest) -> Result<Vec<ReceivedMessage>, QueueError> {
        // A standard queue's messages have no group of their own to report.
        validation::check_kind(&self.name, QueueKind::Fifo)?;
        let (max, visibility, wait) = (request.max_messages(), request.visibility_timeout(), request.wait());
        long_poll(&self.backend, &self.name, max, visibility, wait, None, None).await
    }
}

impl<B: QueueBackend> Queue for EmbeddedQueue<B> {
    type Error = QueueError;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MemoryBackend, QueueConfig};

    #[tokio::test]
    async fn a_long_poll_answers_at_once_when_stopped_while_it_waits() {
        let backend = MemoryBackend::new();
        backend.create_queue("q.fifo", &QueueConfig::default()).await.unwrap();
        let stop = CancellationToken::new();
        let (visibility, wait) = (Duration::from_secs(30), Duration::from_secs(20));
        let mut poll = std::pin::pin!(long_poll(&backend, "q.fifo", 10, visibility, wait, None, Some(&stop)));
        // The memory backend pulls without waiting: one poll finds the queue
        // empty and settles into the wait.
        assert!(futures::poll!(poll.as_mut()).is_pending());
        stop.cancel();
        let answered = tokio::time::timeout(Duration::from_secs(1), poll).await.expect("answers once stopped");
        assert!(answered.unwrap().is_empty());
    }
}
