//! The ingest Lambda: `sluice-ingest`'s router behind API Gateway (HTTP
//! API, payload format 2.0), enqueueing to SQS FIFO, with gates and traces
//! in ElastiCache. `main` only reads the environment, calls [`start`] and
//! hands the router to `lambda_http::run`; everything it does is here, so
//! tests drive the same code with an API Gateway event and no AWS.
//!
//! Configuration: [`IngestSettings`] (`sluice_config`; the variables are
//! in `functions/README.md`). A missing or malformed variable stops the
//! function at start-up with a message naming it. With
//! `SLUICE_CATCH_UP_QUEUE_URL` set, flow control per mall is on
//! ([`Ingest::with_flow_control`]): a mall with `SLUICE_FLOW_MAX_QUEUED`
//! messages in the FIFO queue has its webhooks deferred into its dirty
//! set, and the first deferral of a chain queues a "catch up mall M" request
//! on that queue, which the catch-up function consumes.
//!
//! # Layout
//!
//! - [`start`] / [`build`]: connect to Redis and SQS and build the service.
//! - [`metrics`]: one EMF line per request.

pub mod metrics;

pub use sluice_config::{ConfigError as EnvError, IngestSettings};

use redis::aio::ConnectionLike;
use sluice_aws::{AwsUse, Resource, SqsDelayQueue, SqsQueue, sqs_client};
use sluice_domain::{CatchUpRequests, QueueCatchUpRequests, WorkQueue};
use sluice_ingest::{ApiKeys, ConfigError, Ingest, IngestConfig};
use sluice_redis::Connection;
use std::sync::Arc;

/// What the function calls in AWS: its secrets (API keys, the Redis
/// password), the events queue's sends and the catch-up queue's (flow
/// control's catch-up requests). Its IAM policy in `infra/template.yaml`
/// must allow each (`tests/tests/template_iam.rs`).
pub const AWS_CALLS: &[AwsUse] = &[
    sluice_lambda::aws_calls::READS_SECRETS,
    AwsUse { calls: SqsQueue::SEND_CALLS, resource: Resource::Variable("SLUICE_QUEUE_URL") },
    AwsUse { calls: SqsDelayQueue::SEND_CALLS, resource: Resource::Variable("SLUICE_CATCH_UP_QUEUE_URL") },
];

/// Why the function could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Env(#[from] EnvError),
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Redis, or a secret: the function's shared cold start failed.
    #[error(transparent)]
    Start(#[from] sluice_lambda::StartError),
}

/// Connects to Redis and SQS as `env` says and builds the service. Runs
/// once per execution environment (cold start); every invocation after it
/// reuses the connections.
pub async fn start(env: &IngestSettings) -> Result<Ingest<Connection>, StartError> {
    // Few reconnect attempts and a short timeout (the step functions'):
    // a request that finds Redis down is better answered 503 at once (the
    // sender retries) than held.
    let redis = sluice_lambda::start::connect(&env.common).await?;
    let queue = SqsQueue::new(sqs_client(&env.sqs_endpoint).await, env.queue_url.clone());
    let drain: Option<Arc<dyn CatchUpRequests>> = match &env.flow.queue {
        Some(catch_up) => {
            let requests = SqsDelayQueue::new(sqs_client(&catch_up.endpoint).await, catch_up.url.clone());
            Some(Arc::new(QueueCatchUpRequests::new(requests)))
        }
        None => None,
    };
    build(ingest_config(env).await?, queue, redis, drain)
}

/// The ingest library's configuration from `env`, the API keys read from
/// Secrets Manager when `env` names them by ARN.
pub async fn ingest_config(env: &IngestSettings) -> Result<IngestConfig, StartError> {
    let api_keys = sluice_lambda::start::resolve(&env.api_keys).await?;
    let api_keys = ApiKeys::from_list(&api_keys).map_err(|e| EnvError::Invalid {
        name: sluice_config::variable("api_keys_secret_arn"),
        problem: format!("the secret's value: {e}"),
    })?;
    Ok(env.ingest_config(api_keys))
}

/// The service over any queue and Redis connection, configured by
/// `config`; with flow control per mall when `drain` takes its requests.
pub fn build<Q, C>(
    config: IngestConfig,
    queue: Q,
    redis: C,
    drain: Option<Arc<dyn CatchUpRequests>>,
) -> Result<Ingest<C>, StartError>
where
    Q: WorkQueue + 'static,
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    Ok(match drain {
        Some(drain) => Ingest::with_flow_control(config, queue, redis, drain)?,
        None => Ingest::new(config, queue, redis)?,
    })
}
