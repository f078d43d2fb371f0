//! [`Common`]: what every deployable reads: the Redis it keeps its state
//! in, the key prefix all of them must share, and the stage its metrics
//! are labelled with.

use crate::variables::{Variable, var};
use crate::{ConfigError, EnvSource};
use serde::{Deserialize, Serialize};
use sluice_cafe24::Secret;
use sluice_redis::Keyspace;

pub(crate) const VARIABLES: &[Variable] = &[
    var("redis_url", "yes", "`redis://host:port` (or `rediss://user@host:port`) of ElastiCache / Valkey"),
    var(
        "redis_password_secret_arn",
        "no",
        "a Secrets Manager secret (JSON, field `password`) whose password is added to the URL at cold start",
    ),
    var("key_prefix", "no", "Redis key prefix; the same for every function"),
    var("stage", "no", "the `Stage` dimension of the EMF metrics"),
    var("secret_ttl_secs", "no", "a step function re-reads its secrets (rebuilds its service) when they are this old"),
];

#[derive(Deserialize, Serialize)]
#[serde(default)]
struct CommonVars {
    redis_url: Option<String>,
    redis_password_secret_arn: Option<String>,
    key_prefix: String,
    stage: String,
    #[serde(deserialize_with = "crate::source::parsed")]
    secret_ttl_secs: u64,
}

impl Default for CommonVars {
    fn default() -> Self {
        Self {
            redis_url: None,
            redis_password_secret_arn: None,
            key_prefix: sluice_redis::keyspace::DEFAULT_PREFIX.to_owned(),
            stage: "local".to_owned(),
            secret_ttl_secs: 300,
        }
    }
}

pub(crate) fn defaults() -> serde_json::Value {
    serde_json::to_value(CommonVars::default()).unwrap_or_default()
}

/// Every deployable's part of the configuration.
#[derive(Debug, Clone)]
pub struct Common {
    /// May carry a password: redacted in `Debug`, never in an error.
    pub redis_url: Secret,
    /// The secret to read the Redis password from at cold start, if any.
    pub redis_password_secret_arn: Option<String>,
    pub keyspace: Keyspace,
    pub stage: String,
}

impl Common {
    /// From `source`; the Redis URL is required.
    pub fn read(source: &EnvSource) -> Result<Self, ConfigError> {
        Self::read_optional(source)?.ok_or_else(|| ConfigError::missing(crate::variable("redis_url")))
    }

    /// From `source`; `None` without a Redis URL (the CLI then uses its own Redis).
    pub fn read_optional(source: &EnvSource) -> Result<Option<Self>, ConfigError> {
        let vars: CommonVars = source.extract()?;
        let keyspace = Keyspace::new(vars.key_prefix).map_err(|e| ConfigError::invalid("key_prefix", e.to_string()))?;
        let Some(url) = vars.redis_url else { return Ok(None) };
        // Parsed now so a bad URL stops the cold start with its name; the
        // parser's messages never quote the URL.
        redis::Client::open(url.as_str())
            .map_err(|e| ConfigError::invalid("redis_url", format!("expected redis://host:port: {e}")))?;
        let redis_url = Secret::new(url);
        Ok(Some(Self {
            redis_url,
            redis_password_secret_arn: vars.redis_password_secret_arn,
            keyspace,
            stage: vars.stage,
        }))
    }
}

/// What a function's invocation loop reads: the stage its metrics are
/// labelled with, and how long its secrets are trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Serving {
    pub stage: String,
    pub secret_ttl: std::time::Duration,
}

impl Serving {
    pub fn from_source(source: &EnvSource) -> Result<Self, ConfigError> {
        let vars: CommonVars = source.extract()?;
        crate::in_range("secret_ttl_secs", vars.secret_ttl_secs, 1, None)?;
        Ok(Self { stage: vars.stage, secret_ttl: std::time::Duration::from_secs(vars.secret_ttl_secs) })
    }
}
