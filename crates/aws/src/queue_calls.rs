//! The SQS calls both queue adapters make alike (FIFO for the work queue,
//! standard for the delay queue): ReceiveMessage, DeleteMessage,
//! ChangeMessageVisibility and GetQueueAttributes, and reading a received
//! message's system attributes. Only the send and what a received message
//! is read into differ by kind.

use crate::error::SqsError;
use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::{Message, MessageSystemAttributeName as Attr, QueueAttributeName};
use sluice_domain::queue::rules;
use sluice_domain::queue::{MessageId, QueueAttributes, ReceiptHandle, ReceiveRequest};
use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// ReceiveMessage with every system attribute.
pub(crate) async fn receive(client: &Client, url: &str, request: ReceiveRequest) -> Result<Vec<Message>, SqsError> {
    let output = client
        .receive_message()
        .queue_url(url)
        .max_number_of_messages(i32::from(request.max_messages()))
        .visibility_timeout(seconds(request.visibility_timeout()))
        .wait_time_seconds(seconds(request.wait()))
        .message_system_attribute_names(Attr::All)
        .send()
        .await
        .map_err(|e| SqsError::call("ReceiveMessage", e))?;
    Ok(output.messages.unwrap_or_default())
}

pub(crate) async fn delete(client: &Client, url: &str, receipt: &ReceiptHandle) -> Result<(), SqsError> {
    client
        .delete_message()
        .queue_url(url)
        .receipt_handle(receipt.as_str())
        .send()
        .await
        .map_err(|e| SqsError::call("DeleteMessage", e))?;
    Ok(())
}

pub(crate) async fn change_visibility(
    client: &Client,
    url: &str,
    receipt: &ReceiptHandle,
    timeout: Duration,
) -> Result<(), SqsError> {
    rules::check_visibility_timeout(timeout)?;
    client
        .change_message_visibility()
        .queue_url(url)
        .receipt_handle(receipt.as_str())
        .visibility_timeout(seconds(timeout))
        .send()
        .await
        .map_err(|e| SqsError::call("ChangeMessageVisibility", e))?;
    Ok(())
}

/// Waiting, in flight and delayed messages. SQS keeps no oldest age as a
/// queue attribute (only as a CloudWatch metric), so it is `None`.
pub(crate) async fn attributes(client: &Client, url: &str) -> Result<QueueAttributes, SqsError> {
    let output = client
        .get_queue_attributes()
        .queue_url(url)
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
        count(name.clone())?.ok_or_else(|| SqsError::malformed("GetQueueAttributes", format!("no {}", name.as_str())))
    };
    Ok(QueueAttributes {
        visible: required(QueueAttributeName::ApproximateNumberOfMessages)?,
        in_flight: required(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)?,
        // Stand-ins that predate delays may leave it out: nothing delayed.
        delayed: count(QueueAttributeName::ApproximateNumberOfMessagesDelayed)?.unwrap_or(0),
        oldest_age: None,
    })
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
