//! The cold start of a step function: its settings from the environment
//! (`sluice_config`), its secrets resolved, Redis connected, and the
//! service built over them. Runs once per execution environment; every
//! invocation after it shares the connection, which reconnects by itself.

use sluice_aws::{SqsDelayQueue, sqs_client};
use sluice_cafe24::{Cafe24Client, ClientError, Secret};
use sluice_config::{
    CatchUpSettings, Common, ConfigError, EnvSource, FetchSettings, SecretSetting, SheetSettings, ShopSettings,
    StepSettings,
};
use sluice_domain::{CatchUpRequests, QueueCatchUpRequests, StepError};
use sluice_pipeline::flush_trigger::{FlushTrigger, QueueFlushTrigger};
use sluice_pipeline::{CatchUpService, ServiceCore, SheetService, ShopService};
use sluice_redis::{ConnectError, Connection, Refusal};
use sluice_sheets::SheetsClient;
use std::sync::Arc;
use std::time::Duration;

/// How long connecting to Redis, and each command, may take. A step that
/// finds Redis slow fails as `Sluice.StoreUnavailable`, which the state
/// machine retries with backoff; holding the Lambda longer only burns its
/// timeout.
pub const REDIS_TIMEOUT: Duration = Duration::from_secs(2);
/// Reconnect attempts before a command fails: few, for the same reason.
pub const REDIS_RECONNECT_RETRIES: usize = 2;

/// Why a step function could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Names the variable to look at; the endpoint is shown without its
    /// password.
    #[error("cannot connect to Redis ({hint}): {0}", hint = redis_hint(.0))]
    Redis(ConnectError),
    #[error("cannot read a secret: {0}")]
    Secret(String),
    #[error("cannot build the Cafe24 client: {0}")]
    Cafe24(ClientError),
    #[error("cannot build the Google Sheets client: {0}")]
    Sheets(sluice_sheets::ConfigError),
    #[error("the pipeline settings cannot work: {0}")]
    Steps(StepError),
}

/// A secret's value: the setting's own, or read from Secrets Manager.
pub async fn resolve(setting: &SecretSetting) -> Result<Secret, StartError> {
    match setting {
        SecretSetting::Value(value) => Ok(value.clone()),
        SecretSetting::Arn(arn) => crate::secrets::read(arn).await.map_err(|e| StartError::Secret(e.to_string())),
    }
}

/// Connects to the Redis `common` names (its password read from Secrets
/// Manager when an ARN is set) and builds the core over it.
pub async fn core(settings: &StepSettings) -> Result<ServiceCore<Connection>, StartError> {
    let conn = connect(&settings.common).await?;
    Ok(ServiceCore::new(conn, settings.common.keyspace.clone(), settings.pipeline.clone()))
}

/// A Redis connection as `common` says: standalone or cluster, plain or
/// TLS (`sluice_redis::connect`), its password read from Secrets Manager
/// when an ARN is set.
pub async fn connect(common: &Common) -> Result<Connection, StartError> {
    let mut settings = common.redis_settings();
    if let Some(arn) = &common.redis_password_secret_arn {
        let password =
            crate::secrets::read_field(arn, "password").await.map_err(|e| StartError::Secret(e.to_string()))?;
        settings.password = Some(password.expose().to_owned());
    }
    settings.connect_timeout = REDIS_TIMEOUT;
    settings.response_timeout = REDIS_TIMEOUT;
    settings.reconnect_retries = REDIS_RECONNECT_RETRIES;
    sluice_redis::connect(&settings).await.map_err(StartError::Redis)
}

/// Which variables decide what went wrong.
fn redis_hint(e: &ConnectError) -> &'static str {
    match e {
        ConnectError::CaFile { .. } | ConnectError::CaWithoutTls { .. } => "SLUICE_REDIS_CA_FILE",
        ConnectError::Refused { refusal: Refusal::Tls, .. } => {
            "SLUICE_REDIS_URL, SLUICE_REDIS_CA_FILE: is it rediss:// and is the server's certificate signed by a trusted CA?"
        }
        ConnectError::Refused { refusal: Refusal::Credentials, .. } => {
            "SLUICE_REDIS_URL's user, and the password in it or in SLUICE_REDIS_PASSWORD_SECRET_ARN"
        }
        ConnectError::ClusterProbe { .. } => "SLUICE_REDIS_CLUSTER",
        ConnectError::Url(_) | ConnectError::Refused { .. } => "SLUICE_REDIS_URL",
    }
}

/// The shop service over `core`, with the Cafe24 client.
pub async fn shop(
    settings: &ShopSettings,
    core: ServiceCore<Connection>,
) -> Result<ShopService<Connection>, StartError> {
    let mut config = settings.cafe24.clone();
    config.client_secret = resolve(&settings.cafe24_secret).await?;
    let cafe24 = Cafe24Client::new(config).map_err(StartError::Cafe24)?;
    let alert_url = alert_url(settings.alert_url.as_ref()).await?;
    Ok(ShopService::new(core, cafe24).map_err(StartError::Steps)?.with_alert_url(alert_url))
}

/// The alert webhook's URL. A blank secret (the stack creates it holding
/// one space) means no webhook: alerts stay log lines.
async fn alert_url(setting: Option<&SecretSetting>) -> Result<Option<String>, StartError> {
    let Some(setting) = setting else { return Ok(None) };
    Ok(Some(resolve(setting).await?.expose().trim().to_owned()).filter(|url| !url.is_empty()))
}

/// The sheet service over `core`, asking for flushes through `trigger`,
/// with the Google Sheets client if one is configured.
pub async fn sheet(
    settings: &SheetSettings,
    core: ServiceCore<Connection>,
    trigger: Arc<dyn FlushTrigger>,
) -> Result<SheetService<Connection>, StartError> {
    let alert_url = alert_url(settings.alert_url.as_ref()).await?;
    let service = SheetService::new(core, trigger).with_alert_url(alert_url);
    let Some(google) = &settings.google else { return Ok(service) };
    let mut config = google.config.clone();
    config.client_secret = resolve(&google.secret).await?;
    Ok(service.with_sheets(SheetsClient::new(config).map_err(StartError::Sheets)?))
}

/// plan-batch and record-failure: the core from the process environment.
pub async fn core_from_env() -> Result<ServiceCore<Connection>, StartError> {
    core(&StepSettings::from_source(&EnvSource::from_process())?).await
}

/// fetch: the shop service from the process environment, handing fetches
/// its mall's bucket cannot serve now over to the mall's catch-up when flow
/// control is on (the catch-up queue is set).
pub async fn fetch_from_env() -> Result<ShopService<Connection>, StartError> {
    let settings = FetchSettings::from_source(&EnvSource::from_process())?;
    let shop = shop(&settings.shop, core(&settings.shop.step).await?).await?;
    let Some(queue) = &settings.hand_over else { return Ok(shop) };
    let queue = SqsDelayQueue::new(sqs_client(&queue.endpoint).await, queue.url.clone());
    Ok(shop.with_hand_over(Arc::new(QueueCatchUpRequests::new(queue))))
}

/// ensure-token: the shop service from the process environment.
pub async fn shop_from_env() -> Result<ShopService<Connection>, StartError> {
    let settings = ShopSettings::from_source(&EnvSource::from_process())?;
    shop(&settings, core(&settings.step).await?).await
}

/// store: the shop service from the process environment, without the
/// Cafe24 app. The store step moves what fetch left in Redis to the
/// snapshot streams and never calls Cafe24, so the function is given no
/// Cafe24 variable or secret (least privilege); its client holds no
/// credentials and is never used.
pub async fn store_from_env() -> Result<ShopService<Connection>, StartError> {
    let settings = StepSettings::from_source(&EnvSource::from_process())?;
    let unused = sluice_cafe24::Cafe24Config::new("", Secret::new(String::new()));
    let cafe24 = Cafe24Client::new(unused).map_err(StartError::Cafe24)?;
    ShopService::new(core(&settings).await?, cafe24).map_err(StartError::Steps)
}

/// buffer-row and flush-sheet: the sheet service from the process
/// environment, asking for flushes on the flush queue.
pub async fn sheet_from_env() -> Result<SheetService<Connection>, StartError> {
    let settings = SheetSettings::from_source(&EnvSource::from_process())?;
    let queue = SqsDelayQueue::new(sqs_client(&settings.flush_queue.endpoint).await, settings.flush_queue.url.clone());
    let core = core(&settings.step).await?;
    sheet(&settings, core, Arc::new(QueueFlushTrigger::new(queue))).await
}

/// catch-up: the shop service from the process environment (the
/// flow-control threshold ingest defers by included), queueing each
/// run's next request on the catch-up queue.
pub async fn catch_up_from_env() -> Result<CatchUpService<Connection>, StartError> {
    let settings = CatchUpSettings::from_source(&EnvSource::from_process())?;
    let queue = SqsDelayQueue::new(sqs_client(&settings.queue.endpoint).await, settings.queue.url.clone());
    let requests: Arc<dyn CatchUpRequests> = Arc::new(QueueCatchUpRequests::new(queue));
    let shop = shop(&settings.shop, core(&settings.shop.step).await?).await?;
    Ok(CatchUpService::new(shop, requests))
}
