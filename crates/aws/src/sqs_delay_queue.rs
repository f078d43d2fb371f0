//! The delay queue port on an SQS standard queue: each message sent with
//! its own `DelaySeconds` (or none, for the queue's), received without
//! group, deduplication id or sequence number.

use crate::batch_retry::BatchRetry;
use crate::batch_send::send_with_retry;
use crate::error::SqsError;
use crate::queue_calls::{self, Received, seconds};
use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::{Message, SendMessageBatchRequestEntry};
use sluice_domain::DelayQueue;
use sluice_domain::queue::rules::{self, MAX_BATCH_ENTRIES};
use sluice_domain::queue::{
    DelayedMessage, DelayedOutcome, MessageId, QueueAttributes, ReceiptHandle, ReceiveRequest, ReceivedDelayedMessage,
};
use std::time::Duration;

/// One SQS standard queue, by URL, as a [`DelayQueue`].
#[derive(Debug, Clone)]
pub struct SqsDelayQueue {
    client: Client,
    url: String,
    retry: BatchRetry,
}

impl SqsDelayQueue {
    pub fn new(client: Client, url: impl Into<String>) -> Self {
        Self { client, url: url.into(), retry: BatchRetry::default() }
    }

    /// How entries SQS failed not by the sender's fault are retried.
    pub fn with_retry(mut self, retry: BatchRetry) -> Self {
        self.retry = retry;
        self
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn client(&self) -> &Client {
        &self.client
    }
}

impl DelayQueue for SqsDelayQueue {
    type Error = SqsError;

    async fn send_delayed_call(&self, entries: &[&DelayedMessage]) -> Result<Vec<DelayedOutcome>, SqsError> {
        // The port's helpers check all this already; an adapter called
        // directly checks again rather than let SQS find out.
        if entries.len() > MAX_BATCH_ENTRIES {
            return Err(rules::RuleViolation::TooManyEntries { count: entries.len() }.into());
        }
        for entry in entries {
            rules::check_delayed(entry)?;
        }
        rules::check_batch_payload(entries.iter().map(|e| e.body.as_str()))?;

        let request = entries.iter().enumerate().map(|(i, e)| batch_entry(i, e)).collect::<Result<Vec<_>, _>>()?;
        let outcomes = send_with_retry(&self.client, &self.url, self.retry, &request).await?;
        Ok(outcomes.into_iter().map(|outcome| outcome.map(|ok| MessageId::new(ok.message_id()))).collect())
    }

    async fn receive(&self, request: ReceiveRequest) -> Result<Vec<ReceivedDelayedMessage>, SqsError> {
        let messages = queue_calls::receive(&self.client, &self.url, request).await?;
        messages.iter().map(received).collect()
    }

    async fn delete(&self, receipt: &ReceiptHandle) -> Result<(), SqsError> {
        queue_calls::delete(&self.client, &self.url, receipt).await
    }

    async fn change_visibility(&self, receipt: &ReceiptHandle, timeout: Duration) -> Result<(), SqsError> {
        queue_calls::change_visibility(&self.client, &self.url, receipt, timeout).await
    }

    async fn attributes(&self) -> Result<QueueAttributes, SqsError> {
        queue_calls::attributes(&self.client, &self.url).await
    }
}

/// An entry with no group or deduplication id (SQS refuses the latter on a
/// standard queue), and `DelaySeconds` only when the message names one:
/// left out, the queue's own delay applies.
fn batch_entry(index: usize, entry: &DelayedMessage) -> Result<SendMessageBatchRequestEntry, SqsError> {
    SendMessageBatchRequestEntry::builder()
        .id(index.to_string())
        .message_body(&entry.body)
        .set_delay_seconds(entry.delay.map(seconds))
        .build()
        .map_err(|e| SqsError::malformed("SendMessageBatch", e.to_string()))
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
