//! Message actions on received messages: ReceiveMessage,
//! DeleteMessage(Batch), ChangeMessageVisibility(Batch). The sends are in
//! `send`.

use super::SqsApi;
use super::error::ApiError;
use super::wire::{self, ReceiptEntry, required};
use crate::backend::QueueBackend;
use crate::config::QueueKind;
use crate::embedded::long_poll;
use crate::receive_attempt::ReceiveAttemptId;
use md5::{Digest, Md5};
use serde_json::{Map, Value, json};
use sluice_domain::queue::rules::{self, MAX_BATCH_ENTRIES, MAX_VISIBILITY_TIMEOUT, MAX_WAIT};
use sluice_domain::queue::{ReceiptHandle, ReceivedMessage};
use std::time::{Duration, UNIX_EPOCH};

pub(super) async fn receive_message<B: QueueBackend>(
    api: &SqsApi<B>,
    request: wire::ReceiveMessage,
) -> Result<Value, ApiError> {
    let name = api.queue_name(request.queue_url.as_deref())?;
    let info = api.backend().queue_info(name).await?;
    let max = match request.max_number_of_messages {
        None => 1,
        Some(n @ 1..=10) => n as u8,
        Some(n) => {
            return Err(ApiError::invalid_value(
                "MaxNumberOfMessages",
                n,
                &format!("Must be between 1 and {MAX_BATCH_ENTRIES}, if provided."),
            ));
        }
    };
    let visibility = match request.visibility_timeout {
        None => info.config.visibility_timeout,
        Some(s) => seconds("VisibilityTimeout", s, MAX_VISIBILITY_TIMEOUT)?,
    };
    let wait = match request.wait_time_seconds {
        None => info.config.receive_wait,
        Some(s) => seconds("WaitTimeSeconds", s, MAX_WAIT)?,
    };
    let kind = QueueKind::of(name);
    // Only FIFO queues take it; a standard queue ignores it, unchecked
    // (the rules and what they leave open: `receive_attempt`).
    let attempt = match request.receive_request_attempt_id {
        Some(id) if kind.is_fifo() => Some(
            ReceiveAttemptId::parse(&id)
                .map_err(|reason| ApiError::invalid_value("ReceiveRequestAttemptId", &id, reason))?,
        ),
        _ => None,
    };
    let wanted: Vec<&str> =
        request.attribute_names.iter().chain(&request.message_system_attribute_names).map(String::as_str).collect();
    let messages =
        long_poll(api.backend(), name, max, visibility, wait, attempt.as_ref(), Some(&api.stop_waiting)).await?;
    if messages.is_empty() {
        return Ok(json!({}));
    }
    let messages: Vec<Value> = messages.iter().map(|m| message_json(m, kind, &wanted)).collect();
    Ok(json!({ "Messages": messages }))
}

pub(super) fn seconds(parameter: &str, value: i64, max: Duration) -> Result<Duration, ApiError> {
    match u64::try_from(value) {
        Ok(s) if s <= max.as_secs() => Ok(Duration::from_secs(s)),
        _ => Err(ApiError::invalid_value(
            parameter,
            value,
            &format!("Must be >= 0 and <= {}, if provided.", max.as_secs()),
        )),
    }
}

const SYSTEM_ATTRIBUTES: [&str; 7] = [
    "SenderId",
    "SentTimestamp",
    "ApproximateReceiveCount",
    "ApproximateFirstReceiveTimestamp",
    "SequenceNumber",
    "MessageDeduplicationId",
    "MessageGroupId",
];

/// The system attributes only a FIFO queue's messages have. A standard
/// queue's messages carry their message id as group and deduplication id
/// inside the store; SQS shows neither (nor a sequence number) for them.
const FIFO_ONLY: [&str; 3] = ["SequenceNumber", "MessageDeduplicationId", "MessageGroupId"];

fn message_json(message: &ReceivedMessage, kind: QueueKind, wanted: &[&str]) -> Value {
    let all = wanted.contains(&"All");
    let millis = |t: std::time::SystemTime| t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis()).to_string();
    let mut attributes = Map::new();
    for attr in SYSTEM_ATTRIBUTES {
        if !kind.is_fifo() && FIFO_ONLY.contains(&attr) {
            continue;
        }
        if !all && !wanted.contains(&attr) {
            continue;
        }
        let value = match attr {
            "SenderId" => super::ACCOUNT_ID.to_owned(),
            "SentTimestamp" => millis(message.sent_at),
            "ApproximateReceiveCount" => message.receive_count.to_string(),
            "ApproximateFirstReceiveTimestamp" => millis(message.first_received_at),
            "SequenceNumber" => message.sequence_number.clone(),
            "MessageDeduplicationId" => message.dedup.to_string(),
            _ => message.group.to_string(),
        };
        attributes.insert(attr.into(), Value::String(value));
    }
    let mut json = json!({
        "MessageId": message.message_id.as_str(),
        "ReceiptHandle": message.receipt.as_str(),
        "MD5OfBody": md5_hex(&message.body),
        "Body": message.body,
    });
    if !attributes.is_empty() {
        json["Attributes"] = Value::Object(attributes);
    }
    json
}

/// What a receipt handle (or a batch of them) is for.
#[derive(Debug, Clone, Copy)]
pub(super) enum ReceiptAction {
    Delete,
    ChangeVisibility,
}

impl ReceiptAction {
    async fn apply<B: QueueBackend>(self, api: &SqsApi<B>, name: &str, entry: ReceiptEntry) -> Result<(), ApiError> {
        let handle = ReceiptHandle::new(required(entry.receipt_handle, "ReceiptHandle")?);
        match self {
            Self::Delete => Ok(api.backend().delete_message(name, &handle).await?),
            Self::ChangeVisibility => {
                let timeout = required(entry.visibility_timeout, "VisibilityTimeout")?;
                let timeout = seconds("VisibilityTimeout", timeout, MAX_VISIBILITY_TIMEOUT)?;
                Ok(api.backend().change_visibility(name, &handle, timeout).await?)
            }
        }
    }
}

/// DeleteMessage or ChangeMessageVisibility.
pub(super) async fn receipt_one<B: QueueBackend>(
    api: &SqsApi<B>,
    request: wire::Single<ReceiptEntry>,
    action: ReceiptAction,
) -> Result<Value, ApiError> {
    action.apply(api, api.queue_name(request.queue_url.as_deref())?, request.entry).await?;
    Ok(json!({}))
}

/// DeleteMessageBatch or ChangeMessageVisibilityBatch: applies `action` to
/// each entry, reporting each as successful or failed on its own, as SQS's
/// batch actions do.
pub(super) async fn receipt_batch<B: QueueBackend>(
    api: &SqsApi<B>,
    request: wire::Batch<ReceiptEntry>,
    action: ReceiptAction,
) -> Result<Value, ApiError> {
    let name = api.queue_name(request.queue_url.as_deref())?;
    let entries = request.entries.unwrap_or_default();
    rules::check_entry_ids(entries.iter().map(|e| e.id.as_deref().unwrap_or("")))?;
    api.backend().queue_info(name).await?;
    let (mut successful, mut failed) = (Vec::new(), Vec::new());
    for entry in entries {
        let id = entry.id.clone().unwrap_or_default();
        match action.apply(api, name, entry).await {
            Ok(()) => successful.push(json!({ "Id": id })),
            Err(err) => failed.push(entry_failure(&id, &err)),
        }
    }
    Ok(json!({ "Successful": successful, "Failed": failed }))
}

pub(super) fn entry_failure(id: &str, err: &ApiError) -> Value {
    json!({ "Id": id, "SenderFault": err.sender_fault, "Code": err.entry_code(), "Message": err.message })
}

pub(super) fn md5_hex(body: &str) -> String {
    hex::encode(Md5::digest(body.as_bytes()))
}
