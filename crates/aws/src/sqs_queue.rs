//! The work queue port on SQS FIFO.

use crate::batch_retry::BatchRetry;
use crate::batch_send::send_with_retry;
use crate::error::SqsError;
use crate::queue_calls::{self, Received};
use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::{
    MessageSystemAttributeName as Attr, SendMessageBatchRequestEntry, SendMessageBatchResultEntry,
};
use sluice_domain::queue::rules::{self, MAX_BATCH_ENTRIES};
use sluice_domain::queue::{
    Accepted, MessageId, OutgoingMessage, QueueAttributes, ReceiptHandle, ReceiveRequest, ReceivedMessage, SendOutcome,
};
use sluice_domain::{DedupId, GroupKey, WorkQueue};
use std::time::Duration;

/// One SQS FIFO queue, by URL.
#[derive(Debug, Clone)]
pub struct SqsQueue {
    client: Client,
    url: String,
    retry: BatchRetry,
}

impl SqsQueue {
    pub fn new(client: Client, url: impl Into<String>) -> Self {
        Self { client, url: url.into(), retry: BatchRetry::default() }
    }

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

impl WorkQueue for SqsQueue {
    type Error = SqsError;

    async fn send_call(&self, entries: &[&OutgoingMessage]) -> Result<Vec<SendOutcome>, SqsError> {
        // The batching rule checks all this already; an adapter called
        // directly checks again rather than let SQS find out.
        if entries.len() > MAX_BATCH_ENTRIES {
            return Err(rules::RuleViolation::TooManyEntries { count: entries.len() }.into());
        }
        for entry in entries {
            rules::check_message(entry)?;
        }
        rules::check_batch_payload(entries.iter().map(|e| e.body.as_str()))?;

        let request = entries.iter().enumerate().map(|(i, e)| batch_entry(i, e)).collect::<Result<Vec<_>, _>>()?;
        let outcomes = send_with_retry(&self.client, &self.url, self.retry, &request).await?;
        Ok(outcomes
            .into_iter()
            .map(|outcome| match outcome {
                Ok(ok) => accepted(&ok),
                Err(failure) => SendOutcome::Failed(failure),
            })
            .collect())
    }

    async fn receive(&self, request: ReceiveRequest) -> Result<Vec<ReceivedMessage>, SqsError> {
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

fn batch_entry(index: usize, entry: &OutgoingMessage) -> Result<SendMessageBatchRequestEntry, SqsError> {
    SendMessageBatchRequestEntry::builder()
        .id(index.to_string())
        .message_body(&entry.body)
        .message_group_id(entry.group.as_str())
        .message_deduplication_id(entry.dedup.as_str())
        .build()
        .map_err(|e| SqsError::malformed("SendMessageBatch", e.to_string()))
}

fn accepted(ok: &SendMessageBatchResultEntry) -> SendOutcome {
    SendOutcome::Accepted(Accepted {
        message_id: MessageId::new(ok.message_id()),
        sequence_number: ok.sequence_number().unwrap_or_default().to_owned(),
    })
}

fn received(message: &aws_sdk_sqs::types::Message) -> Result<ReceivedMessage, SqsError> {
    let m = Received::new(message);
    let id = |e: sluice_domain::sqs_token::InvalidToken| Received::bad(e.to_string());
    Ok(ReceivedMessage {
        message_id: m.message_id()?,
        receipt: m.receipt()?,
        body: m.body(),
        group: GroupKey::parse(&m.attribute(Attr::MessageGroupId)?).map_err(id)?,
        dedup: DedupId::parse(&m.attribute(Attr::MessageDeduplicationId)?).map_err(id)?,
        sequence_number: m.attribute(Attr::SequenceNumber)?,
        receive_count: m.receive_count()?,
        sent_at: m.sent_at()?,
        first_received_at: m.first_received_at(),
    })
}
