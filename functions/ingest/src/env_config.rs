//! The function's configuration, read from environment variables (the
//! table in the crate docs). Reading goes through a lookup function so that
//! tests can supply variables without touching the process environment.
//!
//! Secrets stay [`Secret`]s: the API keys become digests at once, and the
//! Redis URL (which may carry a password) is redacted in `Debug` and never
//! part of an error message.

use sluice_aws::SqsEndpoint;
use sluice_cafe24::Secret;
use sluice_ingest::{ApiKeys, IngestConfig};
use sluice_redis::Keyspace;
use std::time::Duration;

pub const REDIS_URL: &str = "SLUICE_REDIS_URL";
pub const QUEUE_URL: &str = "SLUICE_QUEUE_URL";
pub const API_KEYS: &str = "SLUICE_API_KEYS";
pub const KEY_PREFIX: &str = "SLUICE_KEY_PREFIX";
pub const PENDING_TIMEOUT_SECS: &str = "SLUICE_PENDING_TIMEOUT_SECS";
pub const BATCH_LINGER_MS: &str = "SLUICE_BATCH_LINGER_MS";
pub const ACCEPT_LEASE_MS: &str = "SLUICE_ACCEPT_LEASE_MS";
pub const SQS_ENDPOINT: &str = "SLUICE_SQS_ENDPOINT";

/// Everything the function reads at start-up.
#[derive(Debug, Clone)]
pub struct EnvConfig {
    pub redis_url: Secret,
    pub queue_url: String,
    pub api_keys: ApiKeys,
    pub keyspace: Keyspace,
    pub pending_timeout: Option<Duration>,
    /// Zero by default: a Lambda environment serves one request at a time,
    /// so a batch would wait for company that never comes.
    pub batch_linger: Duration,
    /// How long a killed request may hold its delivery and coalescing mark
    /// (the library's default, 10 s, when unset).
    pub accept_lease: Option<Duration>,
    pub sqs_endpoint: SqsEndpoint,
}

/// A variable that is missing or cannot be used, named.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvError {
    #[error("{name} is not set: {what}")]
    Missing { name: &'static str, what: &'static str },
    #[error("{name} is invalid: {problem}")]
    Invalid { name: &'static str, problem: String },
}

impl EnvConfig {
    /// From the process environment.
    pub fn from_env() -> Result<Self, EnvError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// From `lookup`, which returns a variable's value if it is set. An
    /// empty value counts as unset.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, EnvError> {
        let get = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        let required = |name: &'static str, what: &'static str| get(name).ok_or(EnvError::Missing { name, what });
        let invalid = |name: &'static str, problem: String| EnvError::Invalid { name, problem };

        let redis_url = Secret::new(required(REDIS_URL, "the Redis URL, e.g. redis://my-cache:6379")?);
        let queue_url = required(QUEUE_URL, "the SQS FIFO queue URL")?;
        if !queue_url.ends_with(".fifo") {
            return Err(invalid(QUEUE_URL, format!("{queue_url:?} is not a FIFO queue URL (it must end in .fifo)")));
        }
        let api_keys = Secret::new(required(API_KEYS, "the accepted X-API-Key values, comma-separated")?);
        let api_keys = ApiKeys::from_list(&api_keys).map_err(|e| invalid(API_KEYS, e.to_string()))?;
        let keyspace = match get(KEY_PREFIX) {
            Some(prefix) => Keyspace::new(prefix).map_err(|e| invalid(KEY_PREFIX, e.to_string()))?,
            None => Keyspace::default(),
        };
        let pending_timeout = match get(PENDING_TIMEOUT_SECS) {
            Some(text) => Some(Duration::from_secs(positive(&text).map_err(|p| invalid(PENDING_TIMEOUT_SECS, p))?)),
            None => None,
        };
        let batch_linger = match get(BATCH_LINGER_MS) {
            Some(text) => Duration::from_millis(
                text.trim().parse().map_err(|_| invalid(BATCH_LINGER_MS, format!("{text:?} is not a whole number")))?,
            ),
            None => Duration::ZERO,
        };
        let accept_lease = match get(ACCEPT_LEASE_MS) {
            Some(text) => {
                Some(Duration::from_millis(text.trim().parse::<u64>().ok().filter(|ms| *ms > 0).ok_or_else(|| {
                    invalid(ACCEPT_LEASE_MS, format!("{text:?} is not a whole number of ms above zero"))
                })?))
            }
            None => None,
        };
        let sqs_endpoint = get(SQS_ENDPOINT).map_or(SqsEndpoint::Aws, SqsEndpoint::Local);
        Ok(Self { redis_url, queue_url, api_keys, keyspace, pending_timeout, batch_linger, accept_lease, sqs_endpoint })
    }

    /// The ingest's configuration: the library's defaults, overridden by
    /// what the environment sets.
    pub fn ingest_config(&self) -> IngestConfig {
        let mut config = IngestConfig::new(self.api_keys.clone());
        config.keyspace = self.keyspace.clone();
        if let Some(timeout) = self.pending_timeout {
            config.pending_timeout = timeout;
        }
        config.batch.linger = self.batch_linger;
        if let Some(lease) = self.accept_lease {
            config.accept_lease = lease;
        }
        config
    }
}

fn positive(text: &str) -> Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("{text:?} is not a whole number of seconds above zero")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(vars: &[(&str, &str)]) -> Result<EnvConfig, EnvError> {
        let vars: HashMap<String, String> = vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        EnvConfig::from_lookup(|name| vars.get(name).cloned())
    }

    const MINIMAL: [(&str, &str); 3] = [
        (REDIS_URL, "redis://:hunter2@cache:6379"),
        (QUEUE_URL, "https://sqs.ap-northeast-2.amazonaws.com/123456789012/sluice-events.fifo"),
        (API_KEYS, "key-one, key-two"),
    ];

    #[test]
    fn the_three_required_variables_suffice() {
        let config = env(&MINIMAL).unwrap();
        assert_eq!(config.api_keys.len(), 2);
        assert_eq!(config.keyspace, Keyspace::default());
        assert_eq!(config.sqs_endpoint, SqsEndpoint::Aws);
        let ingest = config.ingest_config();
        assert_eq!(ingest.pending_timeout, Duration::from_secs(900));
        assert_eq!(ingest.batch.linger, Duration::ZERO);
    }

    #[test]
    fn each_missing_variable_is_named() {
        for (i, (name, _)) in MINIMAL.iter().enumerate() {
            let mut vars = MINIMAL.to_vec();
            vars.remove(i);
            let err = env(&vars).unwrap_err();
            assert!(err.to_string().starts_with(&format!("{name} is not set: ")), "{err}");
            // Set but empty is as good as missing.
            vars.insert(i, (name, " "));
            assert_eq!(env(&vars).unwrap_err(), err);
        }
    }

    #[test]
    fn optional_variables_override_the_defaults_and_bad_ones_are_named() {
        let mut vars = MINIMAL.to_vec();
        vars.extend([
            (KEY_PREFIX, "shop:"),
            (PENDING_TIMEOUT_SECS, "60"),
            (BATCH_LINGER_MS, "2"),
            (SQS_ENDPOINT, "http://127.0.0.1:9324"),
        ]);
        let config = env(&vars).unwrap();
        let ingest = config.ingest_config();
        assert_eq!(ingest.keyspace.prefix(), "shop:");
        assert_eq!(ingest.pending_timeout, Duration::from_secs(60));
        assert_eq!(ingest.batch.linger, Duration::from_millis(2));
        assert_eq!(config.sqs_endpoint, SqsEndpoint::Local("http://127.0.0.1:9324".into()));

        for (name, value) in [
            (PENDING_TIMEOUT_SECS, "0"),
            (PENDING_TIMEOUT_SECS, "15m"),
            (BATCH_LINGER_MS, "-1"),
            (KEY_PREFIX, "{x}"),
            (QUEUE_URL, "https://sqs.ap-northeast-2.amazonaws.com/1/standard"),
            (API_KEYS, " , "),
        ] {
            let mut vars = MINIMAL.to_vec();
            vars.retain(|(n, _)| *n != name);
            vars.push((name, value));
            let err = env(&vars).unwrap_err();
            assert!(matches!(err, EnvError::Invalid { name: n, .. } if n == name), "{name}={value}: {err}");
        }
    }

    #[test]
    fn debug_output_shows_neither_keys_nor_the_redis_password() {
        let shown = format!("{:?}", env(&MINIMAL).unwrap());
        for secret in ["hunter2", "key-one", "key-two"] {
            assert!(!shown.contains(secret), "{shown}");
        }
    }
}
