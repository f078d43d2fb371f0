//! SendMessage and SendMessageBatch, for both kinds of queue. A FIFO
//! queue's message needs a group and a deduplication id and may not name a
//! delay; a standard queue's may name a delay and takes neither id. Each
//! message is checked as SQS checks it for its queue's kind, and the valid
//! ones of a batch go to the store in one call.

use super::SqsApi;
use super::error::ApiError;
use super::messages::{entry_failure, md5_hex, seconds};
use super::wire::{self, SendEntry, required};
use crate::backend::{QueueBackend, QueueInfo};
use crate::config::QueueKind;
use serde_json::{Value, json};
use sha2::Digest;
use sluice_domain::queue::rules::{self, MAX_DELAY};
use sluice_domain::queue::{DelayedMessage, MessageId, OutgoingMessage};
use sluice_domain::{DedupId, GroupKey};

/// SQS's reason for a parameter the queue's kind does not take.
const NOT_FOR_THIS_KIND: &str = "The request include parameter that is not valid for this queue type.";

/// What the store answered for one message.
#[derive(Debug)]
struct Sent {
    message_id: MessageId,
    /// FIFO queues only.
    sequence_number: Option<String>,
    md5_of_body: String,
}

impl Sent {
    fn json(&self, id: Option<&str>) -> Value {
        let mut json = json!({ "MessageId": self.message_id.as_str(), "MD5OfMessageBody": self.md5_of_body });
        if let Some(id) = id {
            json["Id"] = json!(id);
        }
        if let Some(seq) = &self.sequence_number {
            json["SequenceNumber"] = json!(seq);
        }
        json
    }
}

pub(super) async fn send_message<B: QueueBackend>(
    api: &SqsApi<B>,
    request: wire::Single<SendEntry>,
) -> Result<Value, ApiError> {
    let name = api.queue_name(request.queue_url.as_deref())?;
    let sent = send(api, name, vec![request.entry]).await?;
    let sent = sent.into_iter().next().ok_or_else(|| ApiError::internal("the queue answered no outcome"))??;
    Ok(sent.json(None))
}

pub(super) async fn send_message_batch<B: QueueBackend>(
    api: &SqsApi<B>,
    request: wire::Batch<SendEntry>,
) -> Result<Value, ApiError> {
    let name = api.queue_name(request.queue_url.as_deref())?;
    let entries = request.entries.unwrap_or_default();
    rules::check_entry_ids(entries.iter().map(|e| e.id.as_deref().unwrap_or("")))?;
    rules::check_batch_payload(entries.iter().map(|e| e.message_body.as_deref().unwrap_or("")))?;
    let ids: Vec<String> = entries.iter().map(|e| e.id.clone().unwrap_or_default()).collect();
    let (mut successful, mut failed) = (Vec::new(), Vec::new());
    for (id, outcome) in ids.iter().zip(send(api, name, entries).await?) {
        match outcome {
            Ok(sent) => successful.push(sent.json(Some(id))),
            Err(err) => failed.push(entry_failure(id, &err)),
        }
    }
    Ok(json!({ "Successful": successful, "Failed": failed }))
}

/// Checks each entry for the queue's kind and sends the valid ones in one
/// store call. One outcome per entry, in order; `Err` only when the call
/// itself failed (or the queue does not exist).
async fn send<B: QueueBackend>(
    api: &SqsApi<B>,
    name: &str,
    entries: Vec<SendEntry>,
) -> Result<Vec<Result<Sent, ApiError>>, ApiError> {
    let info = api.backend().queue_info(name).await?;
    match QueueKind::of(name) {
        QueueKind::Fifo => {
            let checked: Vec<_> = entries.into_iter().map(|e| outgoing(&info, e)).collect();
            let valid: Vec<&OutgoingMessage> = checked.iter().filter_map(|c| c.as_ref().ok()).collect();
            let accepted = if valid.is_empty() { Vec::new() } else { api.backend().send(name, &valid).await? };
            let mut accepted = accepted.into_iter();
            answer(checked, |message| {
                let accepted = accepted.next()?;
                Some(Sent {
                    message_id: accepted.message_id,
                    sequence_number: Some(accepted.sequence_number),
                    md5_of_body: md5_hex(&message.body),
                })
            })
        }
        QueueKind::Standard => {
            let checked: Vec<_> = entries.into_iter().map(delayed).collect();
            let valid: Vec<&DelayedMessage> = checked.iter().filter_map(|c| c.as_ref().ok()).collect();
            let ids = if valid.is_empty() { Vec::new() } else { api.backend().send_delayed(name, &valid).await? };
            let mut ids = ids.into_iter();
            answer(checked, |message| {
                Some(Sent { message_id: ids.next()?, sequence_number: None, md5_of_body: md5_hex(&message.body) })
            })
        }
    }
}

/// Pairs each valid entry with the store's answer for it, in order; an
/// entry the store answered nothing for is an internal error, never a
/// success.
fn answer<M>(
    checked: Vec<Result<M, ApiError>>,
    mut next: impl FnMut(&M) -> Option<Sent>,
) -> Result<Vec<Result<Sent, ApiError>>, ApiError> {
    checked
        .into_iter()
        .map(|c| match c {
            Ok(message) => {
                next(&message).map(Ok).ok_or_else(|| ApiError::internal("the queue answered too few outcomes"))
            }
            Err(err) => Ok(Err(err)),
        })
        .collect()
}

/// Refuses what neither kind implements here, by name.
fn check_unsupported(entry: &SendEntry) -> Result<(), ApiError> {
    if entry.message_attributes.as_ref().is_some_and(|m| !m.is_empty()) {
        return Err(ApiError::invalid_parameter(
            "MessageAttributes are not supported by sluice's embedded queue: carry such data in the body",
        ));
    }
    if entry.message_system_attributes.as_ref().is_some_and(|m| !m.is_empty()) {
        return Err(ApiError::invalid_parameter(
            "MessageSystemAttributes (AWSTraceHeader) are not supported by sluice's embedded queue",
        ));
    }
    Ok(())
}

/// A message for a FIFO queue, checked as SQS checks one.
fn outgoing(info: &QueueInfo, mut entry: SendEntry) -> Result<OutgoingMessage, ApiError> {
    let body = required(entry.message_body.take(), "MessageBody")?;
    // SQS refuses a per-message delay on a FIFO queue (0 is no delay, and
    // allowed); only a queue-wide delay exists there.
    if let Some(delay) = entry.delay_seconds.filter(|&d| d != 0) {
        return Err(ApiError::invalid_value("DelaySeconds", delay, NOT_FOR_THIS_KIND));
    }
    check_unsupported(&entry)?;
    let group = required(entry.message_group_id, "MessageGroupId")?;
    let group = GroupKey::parse(&group).map_err(|e| ApiError::invalid_parameter(e.to_string()))?;
    let dedup = match entry.message_deduplication_id {
        Some(id) => DedupId::parse(&id).map_err(|e| ApiError::invalid_parameter(e.to_string()))?,
        None if info.config.content_based_dedup => {
            let digest = hex::encode(sha2::Sha256::digest(body.as_bytes()));
            DedupId::parse(&digest).map_err(|e| ApiError::internal(e.to_string()))?
        }
        None => {
            return Err(ApiError::invalid_parameter(
                "The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided \
                 explicitly",
            ));
        }
    };
    rules::check_body(&body)?;
    Ok(OutgoingMessage::new(group, dedup, body))
}

/// A message for a standard queue, checked as SQS checks one.
fn delayed(mut entry: SendEntry) -> Result<DelayedMessage, ApiError> {
    let body = required(entry.message_body.take(), "MessageBody")?;
    check_unsupported(&entry)?;
    // Checked before the group id: SQS refuses this one on standard
    // queues outright, so a FIFO sender gets SQS's own answer.
    if let Some(dedup) = entry.message_deduplication_id {
        return Err(ApiError::invalid_value("MessageDeduplicationId", dedup, NOT_FOR_THIS_KIND));
    }
    // SQS takes a group id on a standard queue as a fair queue's tenant;
    // the embedded queue has no fair queues, and says so.
    if let Some(group) = entry.message_group_id {
        return Err(ApiError::invalid_value(
            "MessageGroupId",
            group,
            "sluice's embedded queue does not implement fair queues, so its standard queues take no MessageGroupId \
             (a FIFO queue, named *.fifo, has message groups).",
        ));
    }
    let delay = entry.delay_seconds.map(|s| seconds("DelaySeconds", s, MAX_DELAY)).transpose()?;
    rules::check_body(&body)?;
    Ok(DelayedMessage { body, delay })
}
