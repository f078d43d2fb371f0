//! [`Common`]: what every deployable reads: the Redis it keeps its state
//! in, the key prefix all of them must share, and the stage its metrics
//! are labelled with.

use crate::variables::part;
use crate::{ConfigError, EnvSource};
use sluice_cafe24::Secret;
use sluice_redis::{ClusterMode, ConnectSettings, Keyspace};
use std::path::PathBuf;

part! {
    struct CommonVars {
        redis_url: Option<String> = None, "yes",
            "`rediss://user@host:port` (TLS, ACL user) or `redis://host:port` of ElastiCache / Valkey / Redis: see docs/deploy.md";
        redis_password_secret_arn: Option<String> = None, "no",
            "a Secrets Manager secret (JSON, field `password`) whose password is added to the URL at cold start";
        redis_cluster: String = "auto".to_owned(), "no",
            "`auto`: ask the server (`CLUSTER INFO`) once at connect; `on`: a cluster (ElastiCache Serverless); `off`: one server";
        redis_ca_file: Option<String> = None, "no",
            "a PEM file of the CA that signs Redis's TLS certificate, trusted instead of the public roots (a private CA; ElastiCache needs none)";
        key_prefix: String = sluice_redis::keyspace::DEFAULT_PREFIX.to_owned(), "no", "Redis key prefix; the same for every function";
        stage: String = "local".to_owned(), "no", "the `Stage` dimension of the EMF metrics";
        secret_ttl_secs: u64 = 300, "no", "a step function re-reads its secrets (rebuilds its service) when they are this old";
    }
}

/// Every deployable's part of the configuration.
#[derive(Debug, Clone)]
pub struct Common {
    /// May carry a password: redacted in `Debug`, never in an error.
    pub redis_url: Secret,
    /// The secret to read the Redis password from at cold start, if any.
    pub redis_password_secret_arn: Option<String>,
    pub redis_cluster: ClusterMode,
    /// The CA to trust for Redis's TLS certificate instead of the public roots.
    pub redis_ca_file: Option<PathBuf>,
    pub keyspace: Keyspace,
    pub stage: String,
}

impl Common {
    /// From `source`; the Redis URL is required.
    pub fn read(source: &EnvSource) -> Result<Self, ConfigError> {
        Self::read_optional(source)?.ok_or_else(|| ConfigError::missing("redis_url"))
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
        let redis_cluster = vars.redis_cluster.parse().map_err(|e| ConfigError::invalid("redis_cluster", e))?;
        let redis_ca_file = vars.redis_ca_file.filter(|f| !f.trim().is_empty()).map(PathBuf::from);
        if redis_ca_file.is_some() && !redis_url.expose().starts_with("rediss://") {
            return Err(ConfigError::invalid("redis_ca_file", "is set, but SLUICE_REDIS_URL is not rediss:// (TLS)"));
        }
        Ok(Some(Self {
            redis_url,
            redis_password_secret_arn: vars.redis_password_secret_arn,
            redis_cluster,
            redis_ca_file,
            keyspace,
            stage: vars.stage,
        }))
    }
}

impl Common {
    /// How `sluice_redis::connect` reaches this Redis: the URL, the cluster
    /// mode and the CA file, with the `redis` crate's timeouts (callers set
    /// their own) and no password beyond the URL's (a function adds the one
    /// it reads from Secrets Manager).
    pub fn redis_settings(&self) -> ConnectSettings {
        let mut settings = ConnectSettings::new(self.redis_url.expose());
        settings.cluster = self.redis_cluster;
        settings.ca_file = self.redis_ca_file.clone();
        settings
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

#[cfg(test)]
mod tests {
    use super::*;

    fn read(pairs: &[(&str, &str)]) -> Result<Common, ConfigError> {
        Common::read(&EnvSource::from_pairs(pairs.iter().copied()))
    }

    #[test]
    fn the_cluster_mode_and_ca_file_reach_the_connect_settings() {
        let common = read(&[
            ("SLUICE_REDIS_URL", "rediss://sluice@cache.example:6379"),
            ("SLUICE_REDIS_CLUSTER", "on"),
            ("SLUICE_REDIS_CA_FILE", "/etc/sluice/ca.pem"),
        ])
        .unwrap();
        let settings = common.redis_settings();
        assert_eq!(settings.cluster, ClusterMode::On);
        assert_eq!(settings.ca_file, Some(PathBuf::from("/etc/sluice/ca.pem")));
        assert_eq!(settings.endpoint().as_deref(), Some("rediss://sluice@cache.example:6379"));
        let plain = read(&[("SLUICE_REDIS_URL", "redis://127.0.0.1:6379")]).unwrap().redis_settings();
        assert_eq!((plain.cluster, plain.ca_file), (ClusterMode::Auto, None));
    }

    #[test]
    fn a_bad_cluster_mode_or_a_ca_file_without_tls_is_named() {
        let url = ("SLUICE_REDIS_URL", "redis://127.0.0.1:6379");
        let err = read(&[url, ("SLUICE_REDIS_CLUSTER", "maybe")]).unwrap_err().to_string();
        assert_eq!(err, "SLUICE_REDIS_CLUSTER is invalid: expected auto, on or off, not \"maybe\"");
        let err = read(&[url, ("SLUICE_REDIS_CA_FILE", "/ca.pem")]).unwrap_err().to_string();
        assert_eq!(err, "SLUICE_REDIS_CA_FILE is invalid: is set, but SLUICE_REDIS_URL is not rediss:// (TLS)");
    }
}
