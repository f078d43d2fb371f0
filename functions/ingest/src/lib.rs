//! The ingest Lambda: `sluice-ingest`'s router behind API Gateway (HTTP
//! API, payload format 2.0), enqueueing to SQS FIFO, with gates and traces
//! in ElastiCache. `main` only reads the environment, calls [`start`] and
//! hands the router to `lambda_http::run`; everything it does is here, so
//! tests drive the same code with an API Gateway event and no AWS.
//!
//! Configuration (environment variables):
//!
//! | variable                      | required | meaning                                               |
//! |-------------------------------|----------|-------------------------------------------------------|
//! | `SLUICE_REDIS_URL`            | yes      | `redis://host:port` of ElastiCache / Valkey           |
//! | `SLUICE_QUEUE_URL`            | yes      | the SQS FIFO queue's URL                              |
//! | `SLUICE_API_KEYS`             | yes      | accepted `X-API-Key` values, comma-separated          |
//! | `SLUICE_KEY_PREFIX`           | no       | Redis key prefix (default `sluice:`)                  |
//! | `SLUICE_PENDING_TIMEOUT_SECS` | no       | coalescing mark timeout (default 900)                 |
//! | `SLUICE_BATCH_LINGER_MS`      | no       | batch linger (default 0: one request per invocation)  |
//! | `SLUICE_ACCEPT_LEASE_MS`      | no       | how long a killed request holds its delivery (default 10000) |
//! | `SLUICE_SQS_ENDPOINT`         | no       | a local SQS endpoint instead of AWS (`sluice dev`)    |
//!
//! A missing or malformed variable stops the function at start-up with a
//! message naming it.
//!
//! # Layout
//!
//! - [`env_config`]: [`EnvConfig`], read and checked from the environment.
//! - [`start`] / [`build`]: connect to Redis and SQS and build the service.

pub mod env_config;
pub mod metrics;

pub use env_config::{EnvConfig, EnvError};

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use sluice_aws::{SqsQueue, sqs_client};
use sluice_domain::WorkQueue;
use sluice_ingest::{ConfigError, Ingest};
use std::time::Duration;

/// How long a Redis command may take before the request fails with 503
/// (API Gateway gives up on the whole request after 30 s).
const REDIS_TIMEOUT: Duration = Duration::from_secs(2);

/// Why the function could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Env(#[from] EnvError),
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The URL itself is not shown: it may carry a password.
    #[error("cannot connect to Redis at SLUICE_REDIS_URL: {0}")]
    Redis(redis::RedisError),
}

/// Connects to Redis and SQS as `env` says and builds the service. Runs
/// once per execution environment (cold start); every invocation after it
/// reuses the connections.
pub async fn start(env: &EnvConfig) -> Result<Ingest<ConnectionManager>, StartError> {
    let client = redis::Client::open(env.redis_url.expose()).map_err(StartError::Redis)?;
    // Few reconnect attempts: a request that finds Redis down is better
    // answered 503 at once (the sender retries) than held.
    let config = ConnectionManagerConfig::new()
        .set_number_of_retries(2)
        .set_connection_timeout(Some(REDIS_TIMEOUT))
        .set_response_timeout(Some(REDIS_TIMEOUT));
    let redis = client.get_connection_manager_with_config(config).await.map_err(StartError::Redis)?;
    let queue = SqsQueue::new(sqs_client(&env.sqs_endpoint).await, env.queue_url.clone());
    build(env, queue, redis)
}

/// The service over any queue and Redis connection, configured by `env`.
pub fn build<Q, C>(env: &EnvConfig, queue: Q, redis: C) -> Result<Ingest<C>, StartError>
where
    Q: WorkQueue + 'static,
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    Ok(Ingest::new(env.ingest_config(), queue, redis)?)
}
