//! The delay queue port on an SQS standard queue: each message sent with
//! its own `DelaySeconds` (or none, for the queue's), received without
//! group, deduplication id or sequence number.

use crate::error::SqsError;
use crate::queue_calls::{Received, SqsEntry, SqsQueueOf, Standard, seconds};
use aws_sdk_sqs::types::Message;
use aws_sdk_sqs::types::builders::SendMessageBatchRequestEntryBuilder;
use sluice_domain::DelayQueue;
use sluice_domain::queue::rules::{self, RuleViolation};
use sluice_domain::queue::{DelayedMessage, DelayedOutcome, MessageId, ReceiveRequest, ReceivedDelayedMessage};

/// One SQS standard queue, by URL, as a [`DelayQueue`].
pub type SqsDelayQueue = SqsQueueOf<Standard>;

impl DelayQueue for SqsDelayQueue {
    async fn send_delayed_call(&self, entries: &[&DelayedMessage]) -> Result<Vec<DelayedOutcome>, SqsError> {
        let outcomes = self.send_checked(entries).await?;
        Ok(outcomes.into_iter().map(|outcome| outcome.map(|ok| MessageId::new(ok.message_id()))).collect())
    }

    async fn receive(&self, request: ReceiveRequest) -> Result<Vec<ReceivedDelayedMessage>, SqsError> {
        self.receive_messages(request).await?.iter().map(received).collect()
    }
}

impl SqsEntry for DelayedMessage {
    fn body(&self) -> &str {
        &self.body
    }

    fn check(&self) -> Result<(), RuleViolation> {
        rules::check_delayed(self)
    }

    /// No group or deduplication id (SQS refuses the latter on a standard
    /// queue), and `DelaySeconds` only when the message names one: left
    /// out, the queue's own delay applies.
    fn kind_fields(&self, entry: SendMessageBatchRequestEntryBuilder) -> SendMessageBatchRequestEntryBuilder {
        entry.set_delay_seconds(self.delay.map(seconds))
    }
}

fn received(message: &Message) -> Result<ReceivedDelayedMessage, SqsError> {
    let m = Received::new(message);
    Ok(ReceivedDelayedMessage {
        message_id: m.message_id()?,
        receipt: m.receipt()?,
        body: m.body(),
        receive_count: m.receive_count()?,
        sent_at: m.sent_at()?,
        first_received_at: m.first_received_at(),
    })
}
