//! SQS's request shapes (AWS JSON 1.0, members in PascalCase). Every member
//! is optional here so that a missing one is answered with SQS's
//! `MissingParameter` naming it, not a parse error.

use super::error::ApiError;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::HashMap;

/// The member `name`, or `MissingParameter` naming it.
pub(super) fn required<T>(value: Option<T>, name: &str) -> Result<T, ApiError> {
    value.ok_or_else(|| ApiError::missing(name))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct CreateQueue {
    pub(super) queue_name: Option<String>,
    #[serde(default)]
    pub(super) attributes: HashMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct GetQueueUrl {
    pub(super) queue_name: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct ListQueues {
    pub(super) queue_name_prefix: Option<String>,
    pub(super) next_token: Option<String>,
    pub(super) max_results: Option<i64>,
}

/// Requests that name only a queue (DeleteQueue, PurgeQueue,
/// ListDeadLetterSourceQueues).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct QueueOnly {
    pub(super) queue_url: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct GetQueueAttributes {
    pub(super) queue_url: Option<String>,
    #[serde(default)]
    pub(super) attribute_names: Vec<String>,
}

/// One message to send: SendMessage's request, or a SendMessageBatch entry.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct SendEntry {
    /// Batch entries only.
    pub(super) id: Option<String>,
    pub(super) message_body: Option<String>,
    pub(super) delay_seconds: Option<i64>,
    pub(super) message_attributes: Option<Map<String, Value>>,
    pub(super) message_system_attributes: Option<Map<String, Value>>,
    pub(super) message_deduplication_id: Option<String>,
    pub(super) message_group_id: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct ReceiveMessage {
    pub(super) queue_url: Option<String>,
    #[serde(default)]
    pub(super) attribute_names: Vec<String>,
    #[serde(default)]
    pub(super) message_system_attribute_names: Vec<String>,
    pub(super) max_number_of_messages: Option<i64>,
    pub(super) visibility_timeout: Option<i64>,
    pub(super) wait_time_seconds: Option<i64>,
    /// FIFO queues only (see `receive_attempt`).
    pub(super) receive_request_attempt_id: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct ReceiptEntry {
    /// Batch entries only.
    pub(super) id: Option<String>,
    pub(super) receipt_handle: Option<String>,
    pub(super) visibility_timeout: Option<i64>,
}

/// A request of one entry (SendMessage, DeleteMessage,
/// ChangeMessageVisibility): the queue, and the entry's members beside it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct Single<Entry> {
    pub(super) queue_url: Option<String>,
    #[serde(flatten)]
    pub(super) entry: Entry,
}

/// The batch form of a [`Single`] request (SendMessageBatch, …).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct Batch<Entry> {
    pub(super) queue_url: Option<String>,
    pub(super) entries: Option<Vec<Entry>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct StartMessageMoveTask {
    pub(super) source_arn: Option<String>,
    pub(super) destination_arn: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct ListMessageMoveTasks {
    pub(super) source_arn: Option<String>,
    pub(super) max_results: Option<i64>,
}
