//! A fake queue for the send tests of both ports ([`batching`](super::batching)
//! and [`delay`](super::delay)): it records every call, fails an entry whose
//! body starts with `fail`, and fails a whole call when any body is `down`.
//! One fake serves both because both ports batch the same way.

use super::delay::{DelayQueue, DelayedMessage, DelayedOutcome, ReceivedDelayedMessage};
use super::message::{
    Accepted, MessageId, OutgoingMessage, QueueAttributes, ReceiptHandle, ReceiveRequest, ReceivedMessage, SendFailure,
    SendOutcome,
};
use super::rules::{MAX_BATCH_ENTRIES, MAX_PAYLOAD_BYTES};
use super::{Queue, WorkQueue};
use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

/// One call's entries: body and delay (`None` for a FIFO message).
pub(super) type Call = Vec<(String, Option<Duration>)>;

#[derive(Debug, Default)]
pub(super) struct Recorder {
    calls: Mutex<Vec<Call>>,
}

#[derive(Debug, thiserror::Error)]
#[error("queue unreachable")]
pub(super) struct Down;

impl Recorder {
    pub(super) fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }

    /// Each call's bodies.
    pub(super) fn bodies(&self) -> Vec<Vec<String>> {
        self.calls().into_iter().map(|call| call.into_iter().map(|(body, _)| body).collect()).collect()
    }

    /// Records one call and answers each entry: its id, or a failure.
    fn answer(&self, call: Call) -> Result<Vec<DelayedOutcome>, Down> {
        assert!(call.len() <= MAX_BATCH_ENTRIES);
        assert!(call.iter().map(|(body, _)| body.len()).sum::<usize>() <= MAX_PAYLOAD_BYTES);
        self.calls.lock().unwrap().push(call.clone());
        if call.iter().any(|(body, _)| body == "down") {
            return Err(Down);
        }
        Ok(call
            .iter()
            .map(|(body, _)| {
                if body.starts_with("fail") {
                    Err(SendFailure::new("InternalError", "try again", false))
                } else {
                    Ok(MessageId::new(format!("id-{body}")))
                }
            })
            .collect())
    }
}

impl WorkQueue for Recorder {
    async fn send_call(&self, entries: &[&OutgoingMessage]) -> Result<Vec<SendOutcome>, Down> {
        let answers = self.answer(entries.iter().map(|e| (e.body.clone(), None)).collect())?;
        Ok(answers
            .into_iter()
            .map(|answer| match answer {
                Ok(message_id) => SendOutcome::Accepted(Accepted { message_id, sequence_number: "1".into() }),
                Err(failure) => SendOutcome::Failed(failure),
            })
            .collect())
    }

    async fn receive(&self, _: ReceiveRequest) -> Result<Vec<ReceivedMessage>, Down> {
        Ok(Vec::new())
    }
}

impl Queue for Recorder {
    type Error = Down;

    async fn delete(&self, _: &ReceiptHandle) -> Result<(), Down> {
        Ok(())
    }

    async fn change_visibility(&self, _: &ReceiptHandle, _: Duration) -> Result<(), Down> {
        Ok(())
    }

    async fn attributes(&self) -> Result<QueueAttributes, Down> {
        Ok(QueueAttributes::default())
    }
}

/// Nothing but the sends is recorded.
impl DelayQueue for Recorder {
    async fn send_delayed_call(&self, entries: &[&DelayedMessage]) -> Result<Vec<DelayedOutcome>, Down> {
        self.answer(entries.iter().map(|e| (e.body.clone(), e.delay)).collect())
    }

    async fn receive(&self, _: ReceiveRequest) -> Result<Vec<ReceivedDelayedMessage>, Down> {
        Ok(Vec::new())
    }
}

/// The recorder never waits, so one poll finishes a send.
pub(super) fn now<T>(future: impl Future<Output = T>) -> T {
    let mut future = std::pin::pin!(future);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match future.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(value) => value,
        std::task::Poll::Pending => panic!("the recorder never waits"),
    }
}
