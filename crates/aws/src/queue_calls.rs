//! The SQS queue both adapters are, and the calls they make alike (FIFO
//! for the work queue, standard for the delay queue): the checked batch
//! send, ReceiveMessage, DeleteMessage, ChangeMessageVisibility and
//! GetQueueAttributes, and reading a received message's system attributes.
//! Only how an entry is built and what a received message is read into
//! differ by kind.

use crate::api_calls::ApiCall;
use crate::batch_retry::BatchRetry;
use crate::batch_send::{EntryOutcome, send_with_retry};
use crate::error::SqsError;
use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::builders::SendMessageBatchRequestEntryBuilder;
use aws_sdk_sqs::types::{
    Message, MessageSystemAttributeName as Attr, QueueAttributeName, SendMessageBatchRequestEntry,
};
use sluice_domain::Queue;
use sluice_domain::queue::rules::{self, MAX_BATCH_ENTRIES, RuleViolation};
use sluice_domain::queue::{MessageId, QueueAttributes, ReceiptHandle, ReceiveRequest};
use std::collections::HashMap;
use std::marker::PhantomData;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// One SQS queue, by URL. `Kind` ([`Fifo`] or [`Standard`]) only picks
/// which port it implements: [`SqsQueue`](crate::SqsQueue) and
/// [`SqsDelayQueue`](crate::SqsDelayQueue) are this type, so what they hold
/// and how they are built is written once.
#[derive(Debug, Clone)]
pub struct SqsQueueOf<Kind> {
    client: Client,
    url: String,
    retry: BatchRetry,
    kind: PhantomData<Kind>,
}

/// A FIFO queue: the domain's `WorkQueue` port.
#[derive(Debug, Clone, Copy)]
pub struct Fifo;

/// A standard queue: the domain's `DelayQueue` port.
#[derive(Debug, Clone, Copy)]
pub struct Standard;

/// The calls each port method makes, for either kind: what a function
/// using that method must be allowed (`crate::api_calls`).
/// `tests/api_calls.rs` records what each method sends and checks it.
impl<Kind> SqsQueueOf<Kind> {
    /// `send_call` / `send_delayed_call` (so every send helper of the ports).
    pub const SEND_CALLS: &[ApiCall] = &[ApiCall::new("SendMessageBatch", "sqs:SendMessage")];
    /// `receive`.
    pub const RECEIVE_CALLS: &[ApiCall] = &[ApiCall::new("ReceiveMessage", "sqs:ReceiveMessage")];
    /// `delete`.
    pub const DELETE_CALLS: &[ApiCall] = &[ApiCall::new("DeleteMessage", "sqs:DeleteMessage")];
    /// `change_visibility`.
    pub const CHANGE_VISIBILITY_CALLS: &[ApiCall] =
        &[ApiCall::new("ChangeMessageVisibility", "sqs:ChangeMessageVisibility")];
    /// `attributes`.
    pub const ATTRIBUTES_CALLS: &[ApiCall] = &[ApiCall::new("GetQueueAttributes", "sqs:GetQueueAttributes")];

    pub fn new(client: Client, url: impl Into<String>) -> Self {
        Self { client, url: url.into(), retry: BatchRetry::default(), kind: PhantomData }
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

    /// Checks `entries` against SQS's rules, then sends them as one batch
    /// with its failed entries retried. The port's helpers check all this
    /// already; an adapter called directly checks again rather than let
    /// SQS find out.
    pub(crate) async fn send_checked<M: SqsEntry>(&self, entries: &[&M]) -> Result<Vec<EntryOutcome>, SqsError> {
        if entries.len() > MAX_BATCH_ENTRIES {
            return Err(RuleViolation::TooManyEntries { count: entries.len() }.into());
        }
        for entry in entries {
            entry.check()?;
        }
        rules::check_batch_payload(entries.iter().map(|e| e.body()))?;

        let request = entries
            .iter()
            .enumerate()
            .map(|(i, e)| {
                // The index as id is what `send_with_retry` matches answers by.
                e.kind_fields(SendMessageBatchRequestEntry::builder().id(i.to_string()).message_body(e.body()))
                    .build()
                    .map_err(|err| SqsError::malformed("SendMessageBatch", err.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        send_with_retry(&self.client, &self.url, self.retry, &request).await
    }

    /// ReceiveMessage with every system attribute.
    pub(crate) async fn receive_messages(&self, request: ReceiveRequest) -> Result<Vec<Message>, SqsError> {
        let output = self
            .client
            .receive_message()
            .queue_url(&self.url)
            .max_number_of_messages(i32::from(request.max_messages()))
            .visibility_timeout(seconds(request.visibility_timeout()))
            .wait_time_seconds(seconds(request.wait()))
            .message_system_attribute_names(Attr::All)
            .send()
            .await
            .map_err(|e| SqsError::call("ReceiveMessage", e))?;
        Ok(output.messages.unwrap_or_default())
    }
}

/// Both kinds settle a received message and tell their depth with the
/// same calls.
impl<Kind: Send + Sync> Queue for SqsQueueOf<Kind> {
    type Error = SqsError;

    async fn delete(&self, receipt: &ReceiptHandle) -> Result<(), SqsError> {
        self.client
            .delete_message()
            .queue_url(&self.url)
            .receipt_handle(receipt.as_str())
            .send()
            .await
            .map_err(|e| SqsError::call("DeleteMessage", e))?;
        Ok(())
    }

    async fn change_visibility(&self, receipt: &ReceiptHandle, timeout: Duration) -> Result<(), SqsError> {
        rules::check_visibility_timeout(timeout)?;
        self.client
            .change_message_visibility()
            .queue_url(&self.url)
            .receipt_handle(receipt.as_str())
            .visibility_timeout(seconds(timeout))
            .send()
            .await
            .map_err(|e| SqsError::call("ChangeMessageVisibility", e))?;
        Ok(())
    }

    /// Waiting, in flight and delayed messages. SQS keeps no oldest age as
    /// a queue attribute (only as a CloudWatch metric), so it is `None`.
    async fn attributes(&self) -> Result<QueueAttributes, SqsError> {
        let output = self
            .client
            .get_queue_attributes()
            .queue_url(&self.url)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesDelayed)
            .send()
            .await
            .map_err(|e| SqsError::call("GetQueueAttributes", e))?;
        let attributes = output.attributes.unwrap_or_default();
        let count = |name: QueueAttributeName| -> Result<Option<u64>, SqsError> {
            let Some(value) = attributes.get(&name) else { return Ok(None) };
            let bad = || SqsError::malformed("GetQueueAttributes", format!("{}={value:?}", name.as_str()));
            value.parse().map(Some).map_err(|_| bad())
        };
        let required = |name: QueueAttributeName| -> Result<u64, SqsError> {
            count(name.clone())?
                .ok_or_else(|| SqsError::malformed("GetQueueAttributes", format!("no {}", name.as_str())))
        };
        Ok(QueueAttributes {
            visible: required(QueueAttributeName::ApproximateNumberOfMessages)?,
            in_flight: required(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)?,
            // Stand-ins that predate delays may leave it out: nothing delayed.
            delayed: count(QueueAttributeName::ApproximateNumberOfMessagesDelayed)?.unwrap_or(0),
            oldest_age: None,
        })
    }
}

/// What the checked send needs of a message of either kind.
pub(crate) trait SqsEntry {
    fn body(&self) -> &str;
    /// SQS's rules for one message of this kind.
    fn check(&self) -> Result<(), RuleViolation>;
    /// Sets what an entry of this kind carries besides its id and body.
    fn kind_fields(&self, entry: SendMessageBatchRequestEntryBuilder) -> SendMessageBatchRequestEntryBuilder;
}

/// A received message's id, receipt and system attributes, read with
/// errors that name what is missing.
pub(crate) struct Received<'m> {
    message: &'m Message,
    attributes: HashMap<Attr, String>,
}

impl<'m> Received<'m> {
    pub(crate) fn new(message: &'m Message) -> Self {
        Self { message, attributes: message.attributes().cloned().unwrap_or_default() }
    }

    pub(crate) fn bad(detail: impl Into<String>) -> SqsError {
        SqsError::malformed("ReceiveMessage", detail)
    }

    pub(crate) fn message_id(&self) -> Result<MessageId, SqsError> {
        self.message.message_id().map(MessageId::new).ok_or_else(|| Self::bad("no MessageId"))
    }

    pub(crate) fn receipt(&self) -> Result<ReceiptHandle, SqsError> {
        self.message.receipt_handle().map(ReceiptHandle::new).ok_or_else(|| Self::bad("no ReceiptHandle"))
    }

    pub(crate) fn body(&self) -> String {
        self.message.body().unwrap_or_default().to_owned()
    }

    pub(crate) fn attribute(&self, name: Attr) -> Result<String, SqsError> {
        self.attributes.get(&name).cloned().ok_or_else(|| Self::bad(format!("no {} attribute", name.as_str())))
    }

    fn number(&self, name: Attr) -> Result<u64, SqsError> {
        let value = self.attribute(name.clone())?;
        value.parse().map_err(|_| Self::bad(format!("{}={value:?} is not a number", name.as_str())))
    }

    /// `ApproximateReceiveCount`.
    pub(crate) fn receive_count(&self) -> Result<u32, SqsError> {
        u32::try_from(self.number(Attr::ApproximateReceiveCount)?).map_err(|e| Self::bad(e.to_string()))
    }

    /// `SentTimestamp`.
    pub(crate) fn sent_at(&self) -> Result<SystemTime, SqsError> {
        self.time(Attr::SentTimestamp)
    }

    /// `ApproximateFirstReceiveTimestamp`; the epoch when SQS left it out.
    pub(crate) fn first_received_at(&self) -> SystemTime {
        self.time(Attr::ApproximateFirstReceiveTimestamp).unwrap_or(UNIX_EPOCH)
    }

    fn time(&self, name: Attr) -> Result<SystemTime, SqsError> {
        self.number(name).map(|ms| UNIX_EPOCH + Duration::from_millis(ms))
    }
}

/// SQS takes whole seconds; [`ReceiveRequest`], the delay rules and
/// [`rules::check_visibility_timeout`] have checked that they are.
pub(crate) fn seconds(d: Duration) -> i32 {
    i32::try_from(d.as_secs()).unwrap_or(i32::MAX)
}
