//! The service of the two functions that ask for flushes (`buffer-row`,
//! `flush-sheet`): the sheet service, its flush trigger the flush queue
//! from the environment.

use redis::aio::ConnectionManager;
use sluice_aws::{SqsDelayQueue, SqsEndpoint, sqs_client};
use sluice_pipeline::flush_trigger::QueueFlushTrigger;
use sluice_pipeline::{EnvError, PipelineEnv, SheetService, StartError};
use std::sync::Arc;

/// The SQS standard queue the flush function consumes.
const FLUSH_QUEUE_URL: &str = "SLUICE_FLUSH_QUEUE_URL";
/// A local SQS endpoint (`sluice dev`) in place of AWS.
const SQS_ENDPOINT: &str = "SLUICE_SQS_ENDPOINT";

/// The sheet service from the environment, asking for flushes on the
/// flush queue; or why the cold start fails, naming the variable.
pub async fn sheet_service_from_env() -> Result<SheetService<ConnectionManager>, StartError> {
    let env = PipelineEnv::from_env()?;
    let core = env.core().await?;
    let url = std::env::var(FLUSH_QUEUE_URL).ok().filter(|u| !u.trim().is_empty());
    let url =
        url.ok_or(EnvError::Missing { name: FLUSH_QUEUE_URL, what: "the SQS standard queue of flush requests" })?;
    if url.ends_with(".fifo") {
        // A FIFO queue has no per-message DelaySeconds, which the flush's wait relies on.
        let problem = "a FIFO queue; flush requests need a standard queue (DelaySeconds)".to_owned();
        return Err(EnvError::Invalid { name: FLUSH_QUEUE_URL, problem }.into());
    }
    let endpoint =
        std::env::var(SQS_ENDPOINT).ok().filter(|e| !e.is_empty()).map_or(SqsEndpoint::Aws, SqsEndpoint::Local);
    let queue = SqsDelayQueue::new(sqs_client(&endpoint).await, url);
    env.sheet(core, Arc::new(QueueFlushTrigger::new(queue)))
}
