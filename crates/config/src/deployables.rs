//! One struct per deployable, built from the parts: what each function
//! reads, and nothing it does not. The step functions share
//! [`StepSettings`] (which is all store reads); the functions that call
//! Cafe24 add its app ([`ShopSettings`]), the sheet functions the Google client, the flush
//! queue and alerts ([`SheetSettings`]); ingest reads [`IngestSettings`];
//! the drain function the step settings and its database ([`DrainSettings`]);
//! the catch-up function the shop settings and its queue ([`CatchUpSettings`]).

use crate::alert_vars::alert_url;
use crate::flow_vars::{CatchUpQueue, FlowSettings};
use crate::secret_setting::{SecretSetting, either};
use crate::sheet_vars::{GoogleClient, SheetVars, google};
use crate::{Common, ConfigError, EnvSource, cafe24_config, in_range, pipeline_config};
use sluice_aws::SqsEndpoint;
use sluice_cafe24::Cafe24Config;
use sluice_ingest::{ApiKeys, IngestConfig};
use sluice_pipeline::PipelineConfig;
use std::time::Duration;

/// plan-batch and record-failure: Redis and the pipeline's settings.
#[derive(Debug, Clone)]
pub struct StepSettings {
    pub common: Common,
    pub pipeline: PipelineConfig,
}

impl StepSettings {
    pub fn from_source(source: &EnvSource) -> Result<Self, ConfigError> {
        Ok(Self { common: Common::read(source)?, pipeline: pipeline_config(source)? })
    }
}

/// ensure-token (and fetch, see [`FetchSettings`]): the step settings, the
/// Cafe24 app and alerts (store reads [`StepSettings`]: it never calls Cafe24).
#[derive(Debug, Clone)]
pub struct ShopSettings {
    pub step: StepSettings,
    /// Its client secret is in place when [`cafe24_secret`](Self::cafe24_secret) is a value.
    pub cafe24: Cafe24Config,
    pub cafe24_secret: SecretSetting,
    pub alert_url: Option<SecretSetting>,
}

impl ShopSettings {
    pub fn from_source(source: &EnvSource) -> Result<Self, ConfigError> {
        let step = StepSettings::from_source(source)?;
        let (cafe24, cafe24_secret) = cafe24_config(source)?;
        Ok(Self { step, cafe24, cafe24_secret, alert_url: alert_url(source)? })
    }
}

/// fetch: the shop settings, and the catch-up queue when flow control is
/// on (`SLUICE_CATCH_UP_QUEUE_URL`, as for ingest): a fetch its mall's
/// bucket cannot serve now is handed over to the mall's dirty set, and a
/// catch-up request goes there.
#[derive(Debug, Clone)]
pub struct FetchSettings {
    pub shop: ShopSettings,
    /// `None`: flow control is off, and a fetch waits for its mall's bucket.
    pub hand_over: Option<CatchUpQueue>,
}

impl FetchSettings {
    pub fn from_source(source: &EnvSource) -> Result<Self, ConfigError> {
        let shop = ShopSettings::from_source(source)?;
        let hand_over = FlowSettings::from_source(source)?.queue;
        Ok(Self { shop, hand_over })
    }
}

/// The drain function: the step settings (Redis, the key prefix and the
/// snapshot shards every function shares, trace retention) and the
/// PostgreSQL it drains into, whose URL holds a password.
#[derive(Debug, Clone)]
pub struct DrainSettings {
    pub step: StepSettings,
    pub database_url: SecretSetting,
}

impl DrainSettings {
    pub fn from_source(source: &EnvSource) -> Result<Self, ConfigError> {
        let step = StepSettings::from_source(source)?;
        let database_url = crate::database_url(source)?.ok_or_else(|| ConfigError::missing("database_url"))?;
        Ok(Self { step, database_url })
    }
}

/// The catch-up function: the shop settings (it fetches and stores as
/// fetch and store do), with the flow-control threshold ingest defers by,
/// and the catch-up queue its runs queue the next request on.
#[derive(Debug, Clone)]
pub struct CatchUpSettings {
    pub shop: ShopSettings,
    pub queue: CatchUpQueue,
}

impl CatchUpSettings {
    pub fn from_source(source: &EnvSource) -> Result<Self, ConfigError> {
        let mut shop = ShopSettings::from_source(source)?;
        let flow = FlowSettings::from_source(source)?;
        flow.apply(&mut shop.step.pipeline.catch_up.flow);
        let queue = flow.required_queue()?.clone();
        Ok(Self { shop, queue })
    }
}

/// Where flush requests go: an SQS standard queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlushQueue {
    pub url: String,
    pub endpoint: SqsEndpoint,
}

/// buffer-row and flush-sheet: the step settings, the Google client (the
/// sheet path is off without one), alerts and the flush queue.
#[derive(Debug, Clone)]
pub struct SheetSettings {
    pub step: StepSettings,
    pub google: Option<GoogleClient>,
    pub alert_url: Option<SecretSetting>,
    pub flush_queue: FlushQueue,
}

impl SheetSettings {
    pub fn from_source(source: &EnvSource) -> Result<Self, ConfigError> {
        let step = StepSettings::from_source(source)?;
        let v: SheetVars = source.extract()?;
        let url = v.flush_queue_url.clone().ok_or_else(|| ConfigError::missing("flush_queue_url"))?;
        if url.ends_with(".fifo") {
            // A FIFO queue has no per-message DelaySeconds, which the flush's wait relies on.
            let problem = "a FIFO queue; flush requests need a standard queue (DelaySeconds)";
            return Err(ConfigError::invalid("flush_queue_url", problem));
        }
        let endpoint = v.sqs_endpoint.clone().map_or(SqsEndpoint::Aws, SqsEndpoint::Local);
        let alert_url = alert_url(source)?;
        Ok(Self { step, google: google(&v)?, alert_url, flush_queue: FlushQueue { url, endpoint } })
    }
}

/// The ingest function.
#[derive(Debug, Clone)]
pub struct IngestSettings {
    pub common: Common,
    pub queue_url: String,
    pub sqs_endpoint: SqsEndpoint,
    pub api_keys: SecretSetting,
    pub pending_timeout: Duration,
    pub batch_linger: Duration,
    pub accept_lease: Duration,
    /// Back-pressure: how long a request's Redis work before its send may
    /// take (`IngestConfig::accept_deadline`).
    pub accept_deadline: Duration,
    /// Flow control per mall (on when the catch-up queue is set) and
    /// per sheet (always on).
    pub flow: FlowSettings,
}

impl IngestSettings {
    pub fn from_source(source: &EnvSource) -> Result<Self, ConfigError> {
        let v: crate::ingest_vars::IngestVars = source.extract()?;
        let common = Common::read(source)?;
        let queue_url = v.queue_url.ok_or_else(|| ConfigError::missing("queue_url"))?;
        if !queue_url.ends_with(".fifo") {
            let problem = format!("{queue_url:?} is not a FIFO queue URL (it must end in .fifo)");
            return Err(ConfigError::invalid("queue_url", problem));
        }
        let api_keys = either("api_keys", v.api_keys, "api_keys_secret_arn", v.api_keys_secret_arn)?
            .ok_or_else(|| ConfigError::missing("api_keys"))?;
        if let SecretSetting::Value(keys) = &api_keys {
            ApiKeys::from_list(keys).map_err(|e| ConfigError::invalid("api_keys", e.to_string()))?;
        }
        in_range("pending_timeout_secs", v.pending_timeout_secs, 1, None)?;
        in_range("accept_lease_ms", v.accept_lease_ms, 1, None)?;
        in_range("accept_deadline_ms", v.accept_deadline_ms, 1, None)?;
        Ok(Self {
            common,
            queue_url,
            sqs_endpoint: v.sqs_endpoint.map_or(SqsEndpoint::Aws, SqsEndpoint::Local),
            api_keys,
            pending_timeout: Duration::from_secs(v.pending_timeout_secs),
            batch_linger: Duration::from_millis(v.batch_linger_ms),
            accept_lease: Duration::from_millis(v.accept_lease_ms),
            accept_deadline: Duration::from_millis(v.accept_deadline_ms),
            flow: FlowSettings::from_source(source)?,
        })
    }

    /// The ingest library's configuration, with `api_keys` (the resolved
    /// [`api_keys`](Self::api_keys)).
    pub fn ingest_config(&self, api_keys: ApiKeys) -> IngestConfig {
        let mut config = IngestConfig::new(api_keys);
        config.keyspace = self.common.keyspace.clone();
        config.pending_timeout = self.pending_timeout;
        config.batch.linger = self.batch_linger;
        config.accept_lease = self.accept_lease;
        config.accept_deadline = self.accept_deadline;
        self.flow.apply(&mut config.flow_control);
        self.flow.apply_to_sheets(&mut config.sheet_flow);
        config
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REDIS: (&str, &str) = ("SLUICE_REDIS_URL", "redis://:hunter2@cache:6379");
    const QUEUE: (&str, &str) = ("SLUICE_QUEUE_URL", "https://sqs.ap-northeast-2.amazonaws.com/1/sluice-events.fifo");
    const KEYS: (&str, &str) = ("SLUICE_API_KEYS", "key-one, key-two");
    const CAFE24: [(&str, &str); 2] = [("SLUICE_CAFE24_CLIENT_ID", "app"), ("SLUICE_CAFE24_CLIENT_SECRET", "s3cret")];
    const CATCH_UP: (&str, &str) =
        ("SLUICE_CATCH_UP_QUEUE_URL", "https://sqs.ap-northeast-2.amazonaws.com/1/sluice-mall-drain");

    fn source(pairs: &[(&str, &str)]) -> EnvSource {
        EnvSource::from_pairs(pairs.iter().copied())
    }

    #[test]
    fn each_deployable_names_each_variable_it_requires() {
        let ingest = [REDIS, QUEUE, KEYS];
        let shop = [REDIS, CAFE24[0], CAFE24[1]];
        let sheet = [REDIS, ("SLUICE_FLUSH_QUEUE_URL", "https://sqs.ap-northeast-2.amazonaws.com/1/flushes")];
        let drain = [REDIS, ("SLUICE_DATABASE_URL", "postgres://sluice:hunter2@db:5432/app")];
        let catch_up = [REDIS, CAFE24[0], CAFE24[1], CATCH_UP];
        type Read = fn(&EnvSource) -> Result<(), ConfigError>;
        let read: [(&[(&str, &str)], Read); 5] = [
            (&ingest, |s| IngestSettings::from_source(s).map(drop)),
            (&shop, |s| ShopSettings::from_source(s).map(drop)),
            (&sheet, |s| SheetSettings::from_source(s).map(drop)),
            (&drain, |s| DrainSettings::from_source(s).map(drop)),
            (&catch_up, |s| CatchUpSettings::from_source(s).map(drop)),
        ];
        for (required, read) in read {
            read(&source(required)).unwrap();
            for (i, (name, _)) in required.iter().enumerate() {
                let mut vars = required.to_vec();
                vars[i].1 = "  ";
                let err = read(&source(&vars)).unwrap_err();
                assert!(matches!(&err, ConfigError::Missing { name: n, .. } if n == name), "{err}");
                assert!(err.to_string().starts_with(&format!("{name} is not set: ")), "{err}");
            }
        }
    }

    #[test]
    fn a_secret_is_its_value_or_an_arn_but_not_both() {
        let arn = "arn:aws:secretsmanager:ap-northeast-2:1:secret:api-keys";
        let by_arn =
            IngestSettings::from_source(&source(&[REDIS, QUEUE, ("SLUICE_API_KEYS_SECRET_ARN", arn)])).unwrap();
        assert_eq!(by_arn.api_keys, SecretSetting::Arn(arn.into()));
        let both = [REDIS, QUEUE, KEYS, ("SLUICE_API_KEYS_SECRET_ARN", arn)];
        assert_eq!(IngestSettings::from_source(&source(&both)).unwrap_err().name(), "SLUICE_API_KEYS");
        let not_arn = [REDIS, QUEUE, ("SLUICE_API_KEYS_SECRET_ARN", "api-keys")];
        assert_eq!(IngestSettings::from_source(&source(&not_arn)).unwrap_err().name(), "SLUICE_API_KEYS_SECRET_ARN");
    }

    #[test]
    fn ingest_settings_override_the_library_defaults_and_bad_ones_are_named() {
        let vars = [
            REDIS,
            QUEUE,
            KEYS,
            ("SLUICE_KEY_PREFIX", "shop:"),
            ("SLUICE_PENDING_TIMEOUT_SECS", "60"),
            ("SLUICE_BATCH_LINGER_MS", "2"),
            ("SLUICE_ACCEPT_LEASE_MS", "600"),
            ("SLUICE_ACCEPT_DEADLINE_MS", "250"),
            ("SLUICE_SQS_ENDPOINT", "http://127.0.0.1:9324"),
        ];
        let env = IngestSettings::from_source(&source(&vars)).unwrap();
        let SecretSetting::Value(keys) = &env.api_keys else { panic!("a value") };
        let config = env.ingest_config(ApiKeys::from_list(keys).unwrap());
        assert_eq!(config.keyspace.prefix(), "shop:");
        assert_eq!(config.pending_timeout, Duration::from_secs(60));
        assert_eq!(config.batch.linger, Duration::from_millis(2));
        assert_eq!(config.accept_lease, Duration::from_millis(600));
        assert_eq!(config.effective_accept_deadline(), Duration::from_millis(250));
        assert_eq!(env.sqs_endpoint, SqsEndpoint::Local("http://127.0.0.1:9324".into()));
        for (name, value) in [
            ("SLUICE_PENDING_TIMEOUT_SECS", "0"),
            ("SLUICE_PENDING_TIMEOUT_SECS", "15m"),
            ("SLUICE_BATCH_LINGER_MS", "-1"),
            ("SLUICE_ACCEPT_LEASE_MS", "0"),
            ("SLUICE_ACCEPT_DEADLINE_MS", "0"),
            ("SLUICE_KEY_PREFIX", "{x}"),
            ("SLUICE_QUEUE_URL", "https://sqs.ap-northeast-2.amazonaws.com/1/standard"),
            ("SLUICE_API_KEYS", " , "),
            ("SLUICE_REDIS_URL", "http://cache:6379"),
        ] {
            let mut vars = vec![REDIS, QUEUE, KEYS];
            vars.retain(|(n, _)| *n != name);
            vars.push((name, value));
            let err = IngestSettings::from_source(&source(&vars)).unwrap_err();
            assert!(matches!(&err, ConfigError::Invalid { name: n, .. } if n == name), "{name}={value}: {err}");
        }
    }

    #[test]
    fn the_drain_reads_its_database_url_from_a_secret_or_the_value_and_never_shows_it() {
        let arn = "arn:aws:secretsmanager:ap-northeast-2:1:secret:sluice-db";
        let by_arn = DrainSettings::from_source(&source(&[REDIS, ("SLUICE_DATABASE_URL_SECRET_ARN", arn)])).unwrap();
        assert_eq!(by_arn.database_url, SecretSetting::Arn(arn.into()));
        let by_value =
            DrainSettings::from_source(&source(&[REDIS, ("SLUICE_DATABASE_URL", "postgres://u:pw-db@db/app")]));
        let shown = format!("{:?}", by_value.unwrap());
        assert!(!shown.contains("pw-db"), "{shown}");
        let neither = DrainSettings::from_source(&source(&[REDIS])).unwrap_err();
        assert_eq!(neither.name(), "SLUICE_DATABASE_URL");
    }

    #[test]
    fn ingest_and_the_catch_up_function_defer_at_the_same_threshold() {
        let vars = [REDIS, QUEUE, KEYS, CAFE24[0], CAFE24[1], CATCH_UP, ("SLUICE_FLOW_MAX_QUEUED", "12")];
        let ingest = IngestSettings::from_source(&source(&vars)).unwrap();
        let config = ingest.ingest_config(ApiKeys::from_list(&sluice_cafe24::Secret::new("key-one")).unwrap());
        let drain = CatchUpSettings::from_source(&source(&vars)).unwrap();
        assert_eq!(config.flow_control.max_queued, 12);
        assert_eq!(drain.shop.step.pipeline.catch_up.flow, config.flow_control);
        assert_eq!(ingest.flow.queue.as_ref(), Some(&drain.queue));
        let off = IngestSettings::from_source(&source(&[REDIS, QUEUE, KEYS])).unwrap();
        assert_eq!(off.flow.queue, None);
    }

    #[test]
    fn a_fifo_flush_queue_is_refused() {
        let vars = [REDIS, ("SLUICE_FLUSH_QUEUE_URL", "https://sqs.ap-northeast-2.amazonaws.com/1/flushes.fifo")];
        assert_eq!(SheetSettings::from_source(&source(&vars)).unwrap_err().name(), "SLUICE_FLUSH_QUEUE_URL");
    }

    #[test]
    fn neither_debug_nor_errors_show_a_secret() {
        let vars = [REDIS, QUEUE, KEYS, CAFE24[0], CAFE24[1]];
        let shown = format!(
            "{:?} {:?} {:?}",
            IngestSettings::from_source(&source(&vars)).unwrap(),
            ShopSettings::from_source(&source(&vars)).unwrap(),
            source(&vars)
        );
        for secret in ["hunter2", "key-one", "key-two", "s3cret"] {
            assert!(!shown.contains(secret), "{shown}");
        }
        let bad = [("SLUICE_REDIS_URL", "redis://:hunter2@cache:notaport"), QUEUE, KEYS];
        let err = IngestSettings::from_source(&source(&bad)).unwrap_err().to_string();
        assert!(err.starts_with("SLUICE_REDIS_URL is invalid") && !err.contains("hunter2"), "{err}");
    }
}
