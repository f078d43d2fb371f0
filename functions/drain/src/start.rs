//! The drain function's cold start: its settings (`sluice_config::DrainSettings`),
//! Redis connected as every function connects (`sluice_lambda::start`, the
//! password read from Secrets Manager), the database URL resolved the same
//! way (its value, or the secret `SLUICE_DATABASE_URL_SECRET_ARN` names),
//! PostgreSQL connected and the `sluice` schema migrated.
//!
//! Why migrate here: the drain is the only writer of the schema, the
//! migrations are compiled in, and sqlx's migrator applies only what is
//! missing, under PostgreSQL's advisory lock, so environments starting
//! together apply each migration once and a warm database costs one
//! query. A deploy that adds a migration therefore needs no separate step;
//! `sluice db migrate` remains for applying them ahead of it (say, as a
//! database owner while the function's user may not create tables).

use crate::{CONSUMER, DrainService};
use sluice_config::{ConfigError, DrainSettings, EnvSource, SecretSetting};
use sluice_lambda::StartError;
use sluice_redis::{SnapshotStore, Traces};
use sluice_sink::{Drain, DrainConfig, SinkError, SnapshotWriter};

/// Why the drain function could not start. Every message names the
/// variable to look at; the database appears as `host:port/database`,
/// never as its URL, which holds a password.
#[derive(Debug, thiserror::Error)]
pub enum DrainStartError {
    /// Configuration, Redis, or a secret: as every function reports them.
    #[error(transparent)]
    Start(#[from] StartError),
    #[error("the snapshot streams cannot be read (SLUICE_SNAPSHOT_SHARDS, SLUICE_KEY_PREFIX): {0}")]
    Streams(sluice_redis::Error),
    /// Connecting, or applying the migrations, failed.
    #[error("{source} ({variable})")]
    Database { variable: &'static str, source: SinkError },
}

/// The service from the process environment: `main`'s start.
pub async fn drain_from_env() -> Result<DrainService, DrainStartError> {
    let settings = DrainSettings::from_source(&EnvSource::from_process()).map_err(StartError::Config)?;
    drain_service(&settings).await
}

/// The service `settings` describe, connected and migrated.
pub async fn drain_service(settings: &DrainSettings) -> Result<DrainService, DrainStartError> {
    let step = &settings.step;
    let conn = sluice_lambda::start::connect(&step.common).await?;
    let variable = match &settings.database_url {
        SecretSetting::Value(_) => "SLUICE_DATABASE_URL",
        SecretSetting::Arn(_) => "SLUICE_DATABASE_URL_SECRET_ARN",
    };
    let url = sluice_lambda::start::resolve(&settings.database_url).await?;
    // A secret holding something else than a URL would reach sqlx's parser,
    // whose errors can quote it: check the scheme first, as the value's
    // own setting is checked.
    let scheme = url.expose().trim().split_once("://").map(|(scheme, _)| scheme);
    if !matches!(scheme, Some("postgres" | "postgresql")) {
        let problem = "the secret does not hold a postgres://user:password@host:port/database URL";
        return Err(
            StartError::Config(ConfigError::Invalid { name: variable.to_owned(), problem: problem.into() }).into()
        );
    }
    let database = |source| DrainStartError::Database { variable, source };
    let pool = sluice_sink::connect(url.expose().trim()).await.map_err(database)?;
    sluice_sink::migrate(&pool).await.map_err(database)?;
    let keyspace = step.common.keyspace.clone();
    let store = SnapshotStore::new(conn.clone(), keyspace.clone(), step.pipeline.snapshot_shards)
        .map_err(DrainStartError::Streams)?;
    let consumer =
        store.consumer(sluice_redis::snapshot_consumer::DEFAULT_GROUP, CONSUMER).map_err(DrainStartError::Streams)?;
    let traces = Traces::new(conn, keyspace, step.pipeline.trace_retention);
    let drain = Drain::new(consumer, SnapshotWriter::new(pool), DrainConfig::default()).with_traces(traces);
    Ok(DrainService::new(drain))
}
