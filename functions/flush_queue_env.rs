//! The steps of the two functions that ask for flushes (`buffer-row`,
//! `flush-sheet`), with the flush queue from the environment; included by
//! path so there is one copy. `SLUICE_FLUSH_QUEUE_URL` is the SQS standard
//! queue the flush function consumes; `SLUICE_SQS_ENDPOINT` points at a
//! local endpoint (`sluice dev`) instead of AWS.

use redis::aio::ConnectionManager;
use sluice_aws::{SqsDelayQueue, SqsEndpoint, sqs_client};
use sluice_pipeline::flush_trigger::QueueFlushTrigger;
use sluice_pipeline::{PipelineEnv, Steps};
use std::sync::Arc;

pub(crate) const FLUSH_QUEUE_URL: &str = "SLUICE_FLUSH_QUEUE_URL";
pub(crate) const SQS_ENDPOINT: &str = "SLUICE_SQS_ENDPOINT";

/// The steps from the environment, asking for flushes on the flush queue;
/// or why the cold start fails, naming the variable.
pub(crate) async fn steps_with_flush_queue() -> Result<Steps<ConnectionManager>, String> {
    let steps = PipelineEnv::steps_from_env().await.map_err(|e| e.to_string())?;
    let url = std::env::var(FLUSH_QUEUE_URL)
        .ok()
        .filter(|u| !u.trim().is_empty())
        .ok_or_else(|| format!("{FLUSH_QUEUE_URL} is not set: the SQS standard queue of flush requests"))?;
    if url.ends_with(".fifo") {
        return Err(format!(
            "{FLUSH_QUEUE_URL} names a FIFO queue; flush requests need a standard queue (DelaySeconds)"
        ));
    }
    let endpoint =
        std::env::var(SQS_ENDPOINT).ok().filter(|e| !e.is_empty()).map_or(SqsEndpoint::Aws, SqsEndpoint::Local);
    let queue = SqsDelayQueue::new(sqs_client(&endpoint).await, url);
    Ok(steps.with_flush_trigger(Arc::new(QueueFlushTrigger::new(queue))))
}
