//! Queue actions: CreateQueue, GetQueueUrl, ListQueues, DeleteQueue,
//! PurgeQueue, GetQueueAttributes.

use super::SqsApi;
use super::error::ApiError;
use super::wire::{self, required};
use crate::backend::QueueBackend;
use crate::config::{QueueConfig, QueueKind, RedrivePolicy};
use serde_json::{Map, Value, json};
use sluice_domain::queue::rules::{MAX_DELAY, MAX_PAYLOAD_BYTES};
use std::collections::HashMap;
use std::time::{Duration, UNIX_EPOCH};

pub(super) async fn create_queue<B: QueueBackend>(
    api: &SqsApi<B>,
    request: wire::CreateQueue,
) -> Result<Value, ApiError> {
    let name = required(request.queue_name, "QueueName")?;
    let config = config_from(api, &name, &request.attributes)?;
    let info = api.backend().create_queue(&name, &config).await?;
    Ok(json!({ "QueueUrl": api.queue_url(&info.name) }))
}

/// A queue's settings from CreateQueue's attributes, for the kind its name
/// makes it. Attributes the embedded queue does not implement are refused
/// by name. A FIFO queue made here chooses its groups as SQS FIFO does
/// (the default [`GroupScan`](crate::GroupScan), window 120,000): SQS has
/// no attribute for it, so a client of this endpoint sees what it would
/// see in AWS; round-robin queues are made through sluice's own config.
fn config_from<B: QueueBackend>(
    api: &SqsApi<B>,
    name: &str,
    attributes: &HashMap<String, String>,
) -> Result<QueueConfig, ApiError> {
    let kind = QueueKind::of(name);
    let fifo_attribute = attributes.get("FifoQueue").map(String::as_str);
    match (kind, fifo_attribute) {
        (QueueKind::Fifo, Some("true")) | (QueueKind::Standard, None | Some("false")) => {}
        (QueueKind::Fifo, _) => {
            return Err(ApiError::invalid_parameter(format!(
                "Queue {name:?} ends in .fifo, so it is a FIFO queue: create it with the attribute FifoQueue=true \
                 (a standard queue's name cannot end in .fifo)"
            )));
        }
        (QueueKind::Standard, Some(_)) => {
            return Err(ApiError::invalid_parameter(
                "The name of a FIFO queue can only include alphanumeric characters, hyphens, or underscores, must \
                 end with .fifo suffix and be 1 to 80 in length.",
            ));
        }
    }
    let mut config = QueueConfig::default();
    let bad = |attr: &str, value: &str, why: &str| {
        ApiError::invalid_attribute_value(format!("Invalid value {value:?} for the attribute {attr}: {why}"))
    };
    let seconds = |attr: &str, value: &str, max: u64| -> Result<Duration, ApiError> {
        match value.parse::<u64>() {
            Ok(s) if s <= max => Ok(Duration::from_secs(s)),
            _ => Err(bad(attr, value, &format!("it must be whole seconds from 0 to {max}"))),
        }
    };
    let fifo = kind.is_fifo();
    for (attr, value) in attributes {
        match attr.as_str() {
            "FifoQueue" => {}
            "VisibilityTimeout" => config.visibility_timeout = seconds(attr, value, 43_200)?,
            "ReceiveMessageWaitTimeSeconds" => config.receive_wait = seconds(attr, value, 20)?,
            "RedrivePolicy" => config.redrive = Some(redrive_policy(api, value)?),
            "DelaySeconds" if !fifo => config.delay = seconds(attr, value, MAX_DELAY.as_secs())?,
            "ContentBasedDeduplication" if fifo => {
                config.content_based_dedup = match value.as_str() {
                    "true" => true,
                    "false" => false,
                    _ => return Err(bad(attr, value, "it must be true or false")),
                }
            }
            "DelaySeconds" if value == "0" => {}
            "MaximumMessageSize" if value == &MAX_PAYLOAD_BYTES.to_string() => {}
            "DeduplicationScope" if fifo && value == "queue" => {}
            "FifoThroughputLimit" if fifo && (value == "perQueue" || value == "perMessageGroupId") => {}
            "SqsManagedSseEnabled" if value == "false" => {}
            "DelaySeconds" | "MaximumMessageSize" | "SqsManagedSseEnabled" => {
                return Err(bad(attr, value, "sluice's embedded queue implements only the default value"));
            }
            "DeduplicationScope" | "FifoThroughputLimit" if fifo => {
                return Err(bad(attr, value, "sluice's embedded queue implements only the default value"));
            }
            // SQS's answer for a FIFO attribute on a standard queue.
            "ContentBasedDeduplication" | "DeduplicationScope" | "FifoThroughputLimit" => {
                return Err(ApiError::invalid_attribute_name(format!(
                    "Unknown Attribute {attr}. (It applies to FIFO queues only, and {name:?} is a standard queue.)"
                )));
            }
            other => {
                return Err(ApiError::invalid_attribute_name(format!(
                    "Unknown or unsupported attribute {other}: sluice's embedded queue implements FifoQueue, \
                     VisibilityTimeout, ReceiveMessageWaitTimeSeconds, RedrivePolicy, ContentBasedDeduplication \
                     (FIFO queues) and DelaySeconds (standard queues)"
                )));
            }
        }
    }
    Ok(config)
}

/// `{"deadLetterTargetArn": "...", "maxReceiveCount": 5}`; SQS accepts the
/// count as a number or a string.
fn redrive_policy<B: QueueBackend>(api: &SqsApi<B>, value: &str) -> Result<RedrivePolicy, ApiError> {
    let bad = |why: String| {
        ApiError::invalid_attribute_value(format!("Invalid value for the parameter RedrivePolicy. Reason: {why}"))
    };
    let policy: Map<String, Value> =
        serde_json::from_str(value).map_err(|e| bad(format!("Redrive policy is not a valid JSON map: {e}")))?;
    let arn = policy
        .get("deadLetterTargetArn")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("Redrive policy does not contain mandatory attribute: deadLetterTargetArn.".into()))?;
    let dead_letter_queue = api
        .arn_name(arn)
        .ok_or_else(|| bad(format!("Dead letter target {arn:?} is not a queue ARN of this endpoint.")))?
        .to_owned();
    let count = match policy.get("maxReceiveCount") {
        Some(Value::Number(n)) => n.as_u64(),
        Some(Value::String(s)) => s.parse().ok(),
        _ => return Err(bad("Redrive policy does not contain mandatory attribute: maxReceiveCount.".into())),
    };
    let max_receive_count = count
        .and_then(|c| u32::try_from(c).ok())
        .ok_or_else(|| bad("maxReceiveCount must be an integer from 1 to 1000.".into()))?;
    Ok(RedrivePolicy { dead_letter_queue, max_receive_count })
}

pub(super) async fn get_queue_url<B: QueueBackend>(
    api: &SqsApi<B>,
    request: wire::GetQueueUrl,
) -> Result<Value, ApiError> {
    let name = required(request.queue_name, "QueueName")?;
    let info = api.backend().queue_info(&name).await?;
    Ok(json!({ "QueueUrl": api.queue_url(&info.name) }))
}

pub(super) async fn list_queues<B: QueueBackend>(
    api: &SqsApi<B>,
    request: wire::ListQueues,
) -> Result<Value, ApiError> {
    let max = match request.max_results {
        None => None,
        Some(n @ 1..=1000) => Some(n as usize),
        Some(n) => return Err(ApiError::invalid_value("MaxResults", n, "Must be between 1 and 1000, if provided.")),
    };
    if request.next_token.is_some() && max.is_none() {
        return Err(ApiError::invalid_parameter("MaxResults is required when NextToken is given."));
    }
    let prefix = request.queue_name_prefix.unwrap_or_default();
    let after = request.next_token.unwrap_or_default();
    let names: Vec<String> = api
        .backend()
        .list_queues()
        .await?
        .into_iter()
        .filter(|n| n.starts_with(&prefix) && n.as_str() > after.as_str())
        .collect();
    let shown = max.map_or(names.len(), |m| m.min(names.len()));
    let mut answer = Map::new();
    if shown > 0 {
        let urls: Vec<String> = names[..shown].iter().map(|n| api.queue_url(n)).collect();
        answer.insert("QueueUrls".into(), json!(urls));
    }
    if shown < names.len() {
        answer.insert("NextToken".into(), json!(names[shown - 1]));
    }
    Ok(Value::Object(answer))
}

pub(super) async fn delete_queue<B: QueueBackend>(
    api: &SqsApi<B>,
    request: wire::QueueOnly,
) -> Result<Value, ApiError> {
    api.backend().delete_queue(api.queue_name(request.queue_url.as_deref())?).await?;
    Ok(json!({}))
}

pub(super) async fn purge_queue<B: QueueBackend>(api: &SqsApi<B>, request: wire::QueueOnly) -> Result<Value, ApiError> {
    api.backend().purge_queue(api.queue_name(request.queue_url.as_deref())?).await?;
    Ok(json!({}))
}

const ALL_ATTRIBUTES: [&str; 16] = [
    "QueueArn",
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
    "CreatedTimestamp",
    "LastModifiedTimestamp",
    "VisibilityTimeout",
    "ReceiveMessageWaitTimeSeconds",
    "DelaySeconds",
    "MaximumMessageSize",
    "FifoQueue",
    "ContentBasedDeduplication",
    "DeduplicationScope",
    "FifoThroughputLimit",
    "SqsManagedSseEnabled",
    "RedrivePolicy",
];

/// The attributes only a FIFO queue has: absent from a standard queue's.
const FIFO_ONLY: [&str; 4] = ["FifoQueue", "ContentBasedDeduplication", "DeduplicationScope", "FifoThroughputLimit"];

/// SQS attribute names the embedded queue knows but does not have (no
/// policy, no KMS, no retention): asking for them is not an error, they are
/// just absent, as on a queue where they are unset.
const ABSENT_ATTRIBUTES: [&str; 5] =
    ["Policy", "KmsMasterKeyId", "KmsDataKeyReusePeriodSeconds", "MessageRetentionPeriod", "RedriveAllowPolicy"];

pub(super) async fn get_queue_attributes<B: QueueBackend>(
    api: &SqsApi<B>,
    request: wire::GetQueueAttributes,
) -> Result<Value, ApiError> {
    let name = api.queue_name(request.queue_url.as_deref())?;
    for wanted in &request.attribute_names {
        if wanted != "All"
            && !ALL_ATTRIBUTES.contains(&wanted.as_str())
            && !ABSENT_ATTRIBUTES.contains(&wanted.as_str())
        {
            return Err(ApiError::invalid_attribute_name(format!("Unknown Attribute {wanted}.")));
        }
    }
    let info = api.backend().queue_info(name).await?;
    let counts = api.backend().attributes(name).await?;
    let all = request.attribute_names.iter().any(|n| n == "All");
    let fifo = QueueKind::of(name).is_fifo();
    let mut attributes = Map::new();
    for attr in ALL_ATTRIBUTES {
        if (!all && !request.attribute_names.iter().any(|n| n == attr)) || (!fifo && FIFO_ONLY.contains(&attr)) {
            continue;
        }
        let value = match attr {
            "QueueArn" => api.queue_arn(name),
            "ApproximateNumberOfMessages" => counts.visible.to_string(),
            "ApproximateNumberOfMessagesNotVisible" => counts.in_flight.to_string(),
            "ApproximateNumberOfMessagesDelayed" => counts.delayed.to_string(),
            "DelaySeconds" => info.config.delay.as_secs().to_string(),
            "CreatedTimestamp" | "LastModifiedTimestamp" => {
                info.created_at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()).to_string()
            }
            "VisibilityTimeout" => info.config.visibility_timeout.as_secs().to_string(),
            "ReceiveMessageWaitTimeSeconds" => info.config.receive_wait.as_secs().to_string(),
            "MaximumMessageSize" => MAX_PAYLOAD_BYTES.to_string(),
            "FifoQueue" => "true".into(),
            "ContentBasedDeduplication" => info.config.content_based_dedup.to_string(),
            "DeduplicationScope" => "queue".into(),
            "FifoThroughputLimit" => "perQueue".into(),
            "SqsManagedSseEnabled" => "false".into(),
            "RedrivePolicy" => match &info.config.redrive {
                Some(policy) => json!({
                    "deadLetterTargetArn": api.queue_arn(&policy.dead_letter_queue),
                    "maxReceiveCount": policy.max_receive_count,
                })
                .to_string(),
                None => continue,
            },
            _ => return Err(ApiError::internal(format!("attribute {attr} has no value here"))),
        };
        attributes.insert(attr.into(), Value::String(value));
    }
    if attributes.is_empty() {
        return Ok(json!({}));
    }
    Ok(json!({ "Attributes": attributes }))
}

/// Every queue whose redrive policy names `dlq`, sorted.
pub(super) async fn sources_of<B: QueueBackend>(api: &SqsApi<B>, dlq: &str) -> Result<Vec<String>, ApiError> {
    let mut sources = Vec::new();
    for name in api.backend().list_queues().await? {
        // A queue deleted between the listing and now is simply not a source.
        let Ok(info) = api.backend().queue_info(&name).await else { continue };
        if info.config.redrive.as_ref().is_some_and(|p| p.dead_letter_queue == dlq) {
            sources.push(name);
        }
    }
    Ok(sources)
}
