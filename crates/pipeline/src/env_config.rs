//! [`PipelineEnv`]: the step functions' configuration, read from
//! environment variables once per execution environment, and
//! [`PipelineEnv::core`], which connects and builds the [`ServiceCore`]
//! every invocation of that environment shares, and the services over it
//! ([`PipelineEnv::shop`]; the sheet service's is in [`sheet_env`]).
//!
//! [`sheet_env`]: crate::sheet_env All step Lambdas read the
//! same variables (one table in `functions/README.md`), so a deployment can
//! give them one environment.
//!
//! Reading goes through a lookup function, so tests supply variables
//! without touching the process environment. An empty value counts as
//! unset. Secrets (the Cafe24 client secret, the Redis URL, which may carry
//! a password) stay [`Secret`]s: redacted in `Debug`, never part of an error.

use crate::config::PipelineConfig;
use crate::service_core::ServiceCore;
use crate::shop_service::ShopService;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use sluice_cafe24::{BaseUrlTemplate, Cafe24Client, Cafe24Config, ClientError, Secret};
use sluice_domain::StepError;
use sluice_redis::{BucketSpec, Keyspace};
use sluice_sheets::SheetsConfig;
use std::str::FromStr;
use std::time::Duration;

pub const REDIS_URL: &str = "SLUICE_REDIS_URL";
pub const KEY_PREFIX: &str = "SLUICE_KEY_PREFIX";
pub const CAFE24_CLIENT_ID: &str = "SLUICE_CAFE24_CLIENT_ID";
pub const CAFE24_CLIENT_SECRET: &str = "SLUICE_CAFE24_CLIENT_SECRET";
pub const CAFE24_BASE_URL: &str = "SLUICE_CAFE24_BASE_URL";
pub const CAFE24_API_VERSION: &str = "SLUICE_CAFE24_API_VERSION";
pub const BUCKET_CAPACITY: &str = "SLUICE_BUCKET_CAPACITY";
pub const BUCKET_DRAIN_PER_SEC: &str = "SLUICE_BUCKET_DRAIN_PER_SEC";
pub const INLINE_WAIT_MAX_MS: &str = "SLUICE_INLINE_WAIT_MAX_MS";
pub const STEP_WAIT_BUDGET_MS: &str = "SLUICE_STEP_WAIT_BUDGET_MS";
pub const TOKEN_REFRESH_MARGIN_SECS: &str = "SLUICE_TOKEN_REFRESH_MARGIN_SECS";
pub const REFRESH_LOCK_LEASE_SECS: &str = "SLUICE_REFRESH_LOCK_LEASE_SECS";
pub const MAX_RECEIVE_COUNT: &str = "SLUICE_MAX_RECEIVE_COUNT";
pub const SNAPSHOT_SHARDS: &str = "SLUICE_SNAPSHOT_SHARDS";
pub const MAP_MAX_CONCURRENCY: &str = "SLUICE_MAP_MAX_CONCURRENCY";
pub const TRACE_RETENTION_SECS: &str = "SLUICE_TRACE_RETENTION_SECS";

/// How long connecting to Redis, and each command, may take. A step that
/// finds Redis slow fails as `Sluice.StoreUnavailable`, which the state
/// machine retries with backoff; holding the Lambda longer only burns its
/// timeout.
pub const REDIS_TIMEOUT: Duration = Duration::from_secs(2);
/// Reconnect attempts before a command fails: few, for the same reason.
pub const REDIS_RECONNECT_RETRIES: usize = 2;

/// Inline Map iterations Step Functions runs at once at most.
const MAX_MAP_CONCURRENCY: u32 = 40;
/// SQS's upper bound for a redrive policy's maxReceiveCount.
const MAX_RECEIVE_COUNT_LIMIT: u32 = 1000;

/// Everything a step function reads at start-up.
#[derive(Debug, Clone)]
pub struct PipelineEnv {
    /// `redis://host:port` of ElastiCache / Valkey; may carry a password.
    pub redis_url: Secret,
    pub keyspace: Keyspace,
    /// Base URL template, API version and app credentials (the secret is a
    /// [`Secret`] inside).
    pub cafe24: Cafe24Config,
    pub config: PipelineConfig,
    /// The Google Sheets client's settings; `None` leaves the sheet path off.
    pub sheets: Option<SheetsConfig>,
    pub alert_url: Option<String>,
}

/// A variable that is missing or cannot be used, named.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvError {
    #[error("{name} is not set: {what}")]
    Missing { name: &'static str, what: &'static str },
    #[error("{name} is invalid: {problem}")]
    Invalid { name: &'static str, problem: String },
}

/// Why a step function could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Env(#[from] EnvError),
    /// The URL itself is not shown: it may carry a password.
    #[error("cannot connect to Redis at {REDIS_URL}: {0}")]
    Redis(redis::RedisError),
    #[error("cannot build the Cafe24 client: {0}")]
    Cafe24(ClientError),
    #[error("cannot build the Google Sheets client: {0}")]
    Sheets(sluice_sheets::ConfigError),
    #[error("the pipeline settings cannot work: {0}")]
    Steps(StepError),
}

impl PipelineEnv {
    /// From the process environment.
    pub fn from_env() -> Result<Self, EnvError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Only the settings (limits, sizes, the sheet path) from the process
    /// environment: the variables the connections need may be missing.
    pub fn config_from_env() -> Result<PipelineConfig, EnvError> {
        let lookup = |name: &str| std::env::var(name).ok();
        settings(&Vars(&lookup)).map(|(config, _)| config)
    }

    /// From `lookup`, which returns a variable's value if it is set.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, EnvError> {
        let vars = Vars(&lookup);

        let redis_url = Secret::new(vars.required(REDIS_URL, "the Redis URL, e.g. redis://my-cache:6379")?);
        // Parsed now so a bad URL stops the cold start with its name; the
        // parser's messages never quote the URL.
        redis::Client::open(redis_url.expose())
            .map_err(|e| invalid(REDIS_URL, format!("expected redis://host:port: {e}")))?;
        let keyspace = match vars.get(KEY_PREFIX) {
            Some(prefix) => Keyspace::new(prefix).map_err(|e| invalid(KEY_PREFIX, e.to_string()))?,
            None => Keyspace::default(),
        };

        let client_id = vars.required(CAFE24_CLIENT_ID, "the Cafe24 app's client id")?;
        let client_secret = Secret::new(vars.required(CAFE24_CLIENT_SECRET, "the Cafe24 app's client secret")?);
        let mut cafe24 = Cafe24Config::new(client_id, client_secret);
        if let Some(template) = vars.get(CAFE24_BASE_URL) {
            cafe24.base_url = BaseUrlTemplate::new(template).map_err(|e| invalid(CAFE24_BASE_URL, e.to_string()))?;
        }
        if let Some(version) = vars.get(CAFE24_API_VERSION) {
            cafe24.api_version = api_version(&version).map_err(|p| invalid(CAFE24_API_VERSION, p))?;
        }

        let (config, sheet_env) = settings(&vars)?;
        Ok(Self { redis_url, keyspace, cafe24, config, sheets: sheet_env.sheets, alert_url: sheet_env.alert_url })
    }

    /// Connects to Redis and builds the core the services share. Runs once
    /// per execution environment (cold start); every invocation after it
    /// shares the connection, which reconnects by itself.
    pub async fn core(&self) -> Result<ServiceCore<ConnectionManager>, StartError> {
        let client = redis::Client::open(self.redis_url.expose()).map_err(StartError::Redis)?;
        let redis = ConnectionManagerConfig::new()
            .set_number_of_retries(REDIS_RECONNECT_RETRIES)
            .set_connection_timeout(Some(REDIS_TIMEOUT))
            .set_response_timeout(Some(REDIS_TIMEOUT));
        let conn = client.get_connection_manager_with_config(redis).await.map_err(StartError::Redis)?;
        Ok(ServiceCore::new(conn, self.keyspace.clone(), self.config.clone()))
    }

    /// The shop service over `core`, with the Cafe24 client.
    pub fn shop(&self, core: ServiceCore<ConnectionManager>) -> Result<ShopService<ConnectionManager>, StartError> {
        let cafe24 = Cafe24Client::new(self.cafe24.clone()).map_err(StartError::Cafe24)?;
        ShopService::new(core, cafe24).map_err(StartError::Steps)
    }

    /// [`from_env`](Self::from_env), then [`core`](Self::core): the plan and
    /// failure functions' start.
    pub async fn core_from_env() -> Result<ServiceCore<ConnectionManager>, StartError> {
        Self::from_env()?.core().await
    }

    /// The same, then [`shop`](Self::shop): the shop functions' start.
    pub async fn shop_from_env() -> Result<ShopService<ConnectionManager>, StartError> {
        let env = Self::from_env()?;
        env.shop(env.core().await?)
    }
}

pub(crate) fn invalid(name: &'static str, problem: String) -> EnvError {
    EnvError::Invalid { name, problem }
}

/// The variables, through the lookup.
pub(crate) struct Vars<'a>(&'a dyn Fn(&str) -> Option<String>);

impl Vars<'_> {
    pub(crate) fn get(&self, name: &str) -> Option<String> {
        (self.0)(name).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
    }

    pub(crate) fn required(&self, name: &'static str, what: &'static str) -> Result<String, EnvError> {
        self.get(name).ok_or(EnvError::Missing { name, what })
    }

    /// A whole number of at least `min` (and at most `max`), if set.
    pub(crate) fn whole<T>(&self, name: &'static str, min: T, max: Option<T>) -> Result<Option<T>, EnvError>
    where
        T: FromStr + PartialOrd + Copy + std::fmt::Display,
    {
        let Some(text) = self.get(name) else { return Ok(None) };
        let in_range = |n: &T| *n >= min && max.is_none_or(|max| *n <= max);
        match text.parse::<T>().ok().filter(in_range) {
            Some(n) => Ok(Some(n)),
            None => Err(invalid(
                name,
                match max {
                    Some(max) => format!("{text:?} is not a whole number from {min} to {max}"),
                    None => format!("{text:?} is not a whole number of at least {min}"),
                },
            )),
        }
    }

    fn millis(&self, name: &'static str) -> Result<Option<Duration>, EnvError> {
        Ok(self.whole(name, 0, None)?.map(Duration::from_millis))
    }

    pub(crate) fn secs(&self, name: &'static str, min: u64) -> Result<Option<Duration>, EnvError> {
        Ok(self.whole(name, min, None)?.map(Duration::from_secs))
    }

    /// A rate per second above zero, if set.
    fn rate(&self, name: &'static str) -> Result<Option<f64>, EnvError> {
        let Some(text) = self.get(name) else { return Ok(None) };
        match text.parse::<f64>() {
            Ok(rate) if rate.is_finite() && rate > 0.0 => Ok(Some(rate)),
            _ => Err(invalid(name, format!("{text:?} is not a number above 0"))),
        }
    }
}

/// Cafe24 names API versions by release date, `YYYY-MM-DD`; anything else
/// would be refused on every call, so it is refused here.
fn api_version(text: &str) -> Result<String, String> {
    let shape_ok = text.len() == 10
        && text.bytes().enumerate().all(|(i, b)| if i == 4 || i == 7 { b == b'-' } else { b.is_ascii_digit() });
    if shape_ok { Ok(text.to_owned()) } else { Err(format!("{text:?} is not a version date like 2025-12-01")) }
}

/// The settings part of the environment (limits, sizes, the sheet path):
/// what `sluice status` needs too, without the connections' variables.
fn settings(vars: &Vars<'_>) -> Result<(PipelineConfig, crate::sheet_env::SheetEnv), EnvError> {
    let defaults = PipelineConfig::default();
    let config = PipelineConfig {
        bucket: BucketSpec {
            capacity: vars.whole(BUCKET_CAPACITY, 1, None)?.unwrap_or(defaults.bucket.capacity),
            drain_per_sec: vars.rate(BUCKET_DRAIN_PER_SEC)?.unwrap_or(defaults.bucket.drain_per_sec),
        },
        inline_wait_max: vars.millis(INLINE_WAIT_MAX_MS)?.unwrap_or(defaults.inline_wait_max),
        step_wait_budget: vars.millis(STEP_WAIT_BUDGET_MS)?.unwrap_or(defaults.step_wait_budget),
        token_refresh_margin: vars.secs(TOKEN_REFRESH_MARGIN_SECS, 0)?.unwrap_or(defaults.token_refresh_margin),
        refresh_lock_lease: vars.secs(REFRESH_LOCK_LEASE_SECS, 1)?.unwrap_or(defaults.refresh_lock_lease),
        max_receive_count: vars
            .whole(MAX_RECEIVE_COUNT, 1, Some(MAX_RECEIVE_COUNT_LIMIT))?
            .unwrap_or(defaults.max_receive_count),
        snapshot_shards: vars.whole(SNAPSHOT_SHARDS, 1, None)?.unwrap_or(defaults.snapshot_shards),
        map_max_concurrency: vars
            .whole(MAP_MAX_CONCURRENCY, 1, Some(MAX_MAP_CONCURRENCY))?
            .unwrap_or(defaults.map_max_concurrency),
        trace_retention: vars.secs(TRACE_RETENTION_SECS, 1)?.unwrap_or(defaults.trace_retention),
        sheets: defaults.sheets.clone(),
    };
    let sheet_env = crate::sheet_env::read(vars)?;
    Ok((PipelineConfig { sheets: sheet_env.settings.clone(), ..config }, sheet_env))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(vars: &[(&str, &str)]) -> Result<PipelineEnv, EnvError> {
        let vars: HashMap<String, String> = vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        PipelineEnv::from_lookup(|name| vars.get(name).cloned())
    }

    const MINIMAL: [(&str, &str); 3] = [
        (REDIS_URL, "redis://:hunter2@cache:6379"),
        (CAFE24_CLIENT_ID, "app-client"),
        (CAFE24_CLIENT_SECRET, "s3cret-client-value"),
    ];

    fn with(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
        let mut vars: Vec<_> = MINIMAL.iter().filter(|(n, _)| extra.iter().all(|(e, _)| e != n)).copied().collect();
        vars.extend_from_slice(extra);
        vars
    }

    #[test]
    fn the_required_variables_suffice_and_the_rest_default() {
        let env = env(&MINIMAL).unwrap();
        assert_eq!(env.redis_url.expose(), "redis://:hunter2@cache:6379");
        assert_eq!(env.keyspace, Keyspace::default());
        assert_eq!(env.cafe24.client_id, "app-client");
        assert_eq!(env.cafe24.client_secret.expose(), "s3cret-client-value");
        assert_eq!(env.cafe24.base_url, BaseUrlTemplate::production());
        assert_eq!(env.cafe24.api_version, sluice_cafe24::DEFAULT_API_VERSION);
        assert_eq!(env.config, PipelineConfig::default());
    }

    #[test]
    fn each_missing_required_variable_is_named() {
        for (i, (name, _)) in MINIMAL.iter().enumerate() {
            let mut vars = MINIMAL.to_vec();
            vars.remove(i);
            let err = env(&vars).unwrap_err();
            assert!(matches!(err, EnvError::Missing { name: n, .. } if n == *name), "{err}");
            assert!(err.to_string().starts_with(&format!("{name} is not set: ")), "{err}");
            // Set but blank is as good as missing.
            vars.insert(i, (name, "  "));
            assert_eq!(env(&vars).unwrap_err(), err);
        }
    }

    #[test]
    fn every_optional_variable_overrides_its_default() {
        let env = env(&with(&[
            (KEY_PREFIX, "shop:"),
            (CAFE24_BASE_URL, "http://127.0.0.1:9024/malls/{mall_id}"),
            (CAFE24_API_VERSION, "2025-06-01"),
            (BUCKET_CAPACITY, "10"),
            (BUCKET_DRAIN_PER_SEC, "0.5"),
            (INLINE_WAIT_MAX_MS, "250"),
            (STEP_WAIT_BUDGET_MS, "0"),
            (TOKEN_REFRESH_MARGIN_SECS, "120"),
            (REFRESH_LOCK_LEASE_SECS, "10"),
            (MAX_RECEIVE_COUNT, "3"),
            (SNAPSHOT_SHARDS, "4"),
            (MAP_MAX_CONCURRENCY, "40"),
            (TRACE_RETENTION_SECS, "3600"),
        ]))
        .unwrap();
        assert_eq!(env.keyspace.prefix(), "shop:");
        assert_eq!(env.cafe24.base_url.for_mall("acme").unwrap(), "http://127.0.0.1:9024/malls/acme");
        assert_eq!(env.cafe24.api_version, "2025-06-01");
        assert_eq!(
            env.config,
            PipelineConfig {
                bucket: BucketSpec { capacity: 10, drain_per_sec: 0.5 },
                inline_wait_max: Duration::from_millis(250),
                step_wait_budget: Duration::ZERO,
                token_refresh_margin: Duration::from_secs(120),
                refresh_lock_lease: Duration::from_secs(10),
                max_receive_count: 3,
                snapshot_shards: 4,
                map_max_concurrency: 40,
                trace_retention: Duration::from_secs(3600),
                sheets: crate::config::SheetConfig::default(),
            }
        );
    }

    #[test]
    fn a_malformed_variable_is_named() {
        for (name, value) in [
            (REDIS_URL, "cache:6379"),
            (KEY_PREFIX, "{x}"),
            (CAFE24_BASE_URL, "https://cafe24api.com"),
            (CAFE24_API_VERSION, "latest"),
            (BUCKET_CAPACITY, "0"),
            (BUCKET_CAPACITY, "forty"),
            (BUCKET_DRAIN_PER_SEC, "0"),
            (BUCKET_DRAIN_PER_SEC, "NaN"),
            (INLINE_WAIT_MAX_MS, "-1"),
            (STEP_WAIT_BUDGET_MS, "5s"),
            (TOKEN_REFRESH_MARGIN_SECS, "1.5"),
            (REFRESH_LOCK_LEASE_SECS, "0"),
            (MAX_RECEIVE_COUNT, "0"),
            (MAX_RECEIVE_COUNT, "1001"),
            (SNAPSHOT_SHARDS, "0"),
            (MAP_MAX_CONCURRENCY, "41"),
            (TRACE_RETENTION_SECS, "0"),
        ] {
            let err = env(&with(&[(name, value)])).unwrap_err();
            assert!(matches!(err, EnvError::Invalid { name: n, .. } if n == name), "{name}={value}: {err}");
            assert!(err.to_string().starts_with(&format!("{name} is invalid: ")), "{err}");
        }
    }

    #[test]
    fn secrets_appear_in_neither_debug_output_nor_errors() {
        let shown = format!("{:?}", env(&MINIMAL).unwrap());
        assert!(shown.contains("app-client"), "the client id is not secret: {shown}");
        for secret in ["hunter2", "s3cret-client-value"] {
            assert!(!shown.contains(secret), "{shown}");
        }
        // A Redis URL that does not parse is refused without quoting it.
        let err = env(&with(&[(REDIS_URL, "redis://:hunter2@cache:6379/not-a-db")])).unwrap_err();
        assert!(matches!(err, EnvError::Invalid { name: REDIS_URL, .. }), "{err}");
        assert!(!err.to_string().contains("hunter2"), "{err}");
        assert!(!format!("{err:?}").contains("hunter2"), "{err:?}");
    }

    #[tokio::test]
    async fn an_unreachable_redis_fails_the_start_without_its_password() {
        // Port 1 on loopback: nothing listens, the connection is refused.
        let env = env(&with(&[(REDIS_URL, "redis://:hunter2@127.0.0.1:1")])).unwrap();
        let err = env.core().await.unwrap_err();
        assert!(matches!(err, StartError::Redis(_)), "{err}");
        let shown = format!("{err} {err:?}");
        assert!(shown.contains(REDIS_URL) && !shown.contains("hunter2"), "{shown}");
    }
}
