//! Redrive over the SQS API: StartMessageMoveTask, ListMessageMoveTasks,
//! ListDeadLetterSourceQueues.
//!
//! SQS runs a move task in the background; the embedded queue moves the
//! messages before answering (each step atomic, see
//! [`QueueBackend::move_messages`]), so a task is `COMPLETED` by the time
//! its handle is returned, and ListMessageMoveTasks reports it so. Without
//! a DestinationArn, every message goes back to the queue that moved it to
//! the dead-letter queue, as SQS does. Tasks are remembered in this
//! process only.

use super::SqsApi;
use super::error::ApiError;
use super::queues::sources_of;
use super::wire::{self, required};
use crate::backend::QueueBackend;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use std::sync::{Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

/// Finished move tasks, newest last.
#[derive(Debug, Default)]
pub(super) struct MoveTasks(Mutex<Vec<Value>>);

pub(super) async fn start<B: QueueBackend>(
    api: &SqsApi<B>,
    request: wire::StartMessageMoveTask,
) -> Result<Value, ApiError> {
    let source_arn = required(request.source_arn, "SourceArn")?;
    let not_found = || {
        ApiError::resource_not_found(format!(
            "The resource that you specified for the SourceArn parameter doesn't exist: {source_arn}"
        ))
    };
    let dlq = api.arn_name(&source_arn).ok_or_else(not_found)?.to_owned();
    api.backend().queue_info(&dlq).await.map_err(|_| not_found())?;
    let sources = sources_of(api, &dlq).await?;
    if sources.is_empty() {
        return Err(ApiError::invalid_parameter(format!(
            "Source queue must be configured as a Dead Letter Queue: no queue's RedrivePolicy names {source_arn}"
        )));
    }
    let started = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
    let moved = match &request.destination_arn {
        Some(arn) => {
            let destination = api.arn_name(arn).ok_or_else(|| {
                ApiError::resource_not_found(format!(
                    "The resource that you specified for the DestinationArn parameter doesn't exist: {arn}"
                ))
            })?;
            api.backend().move_messages(&dlq, destination, None).await?
        }
        None => {
            let mut moved = 0;
            for source in &sources {
                moved += api.backend().move_messages(&dlq, source, Some(source)).await?;
            }
            moved
        }
    };
    let handle =
        STANDARD.encode(json!({ "taskId": uuid::Uuid::new_v4().to_string(), "sourceArn": source_arn }).to_string());
    let mut task = json!({
        "TaskHandle": handle,
        "Status": "COMPLETED",
        "SourceArn": source_arn,
        "ApproximateNumberOfMessagesMoved": moved,
        "ApproximateNumberOfMessagesToMove": moved,
        "StartedTimestamp": started,
    });
    if let Some(arn) = request.destination_arn {
        task["DestinationArn"] = Value::String(arn);
    }
    api.move_tasks.0.lock().unwrap_or_else(PoisonError::into_inner).push(task);
    Ok(json!({ "TaskHandle": handle }))
}

pub(super) async fn list<B: QueueBackend>(
    api: &SqsApi<B>,
    request: wire::ListMessageMoveTasks,
) -> Result<Value, ApiError> {
    let source_arn = required(request.source_arn, "SourceArn")?;
    let max = match request.max_results {
        None => 1,
        Some(n @ 1..=10) => n as usize,
        Some(n) => return Err(ApiError::invalid_value("MaxResults", n, "Must be between 1 and 10, if provided.")),
    };
    let tasks = api.move_tasks.0.lock().unwrap_or_else(PoisonError::into_inner);
    let results: Vec<Value> =
        tasks.iter().rev().filter(|t| t["SourceArn"] == source_arn.as_str()).take(max).cloned().collect();
    Ok(json!({ "Results": results }))
}

pub(super) async fn dead_letter_sources<B: QueueBackend>(
    api: &SqsApi<B>,
    request: wire::QueueOnly,
) -> Result<Value, ApiError> {
    let dlq = api.queue_name(request.queue_url.as_deref())?;
    api.backend().queue_info(dlq).await?;
    let urls: Vec<String> = sources_of(api, dlq).await?.iter().map(|q| api.queue_url(q)).collect();
    Ok(json!({ "queueUrls": urls }))
}
