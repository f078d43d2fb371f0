//! The sheet functions' variables: the Google OAuth client (without it the
//! sheet path is off) and the flush queue (alerts: `alert_vars`).

use crate::secret_setting::{SecretSetting, either};
use crate::variables::{Variable, var};
use crate::{ConfigError, EnvSource};
use serde::{Deserialize, Serialize};
use sluice_cafe24::Secret;
use sluice_sheets::SheetsConfig;
use sluice_sheets::config::{PRODUCTION_API_BASE_URL, PRODUCTION_TOKEN_URL};

pub(crate) const VARIABLES: &[Variable] = &[
    var("google_client_id", "for the flush", "the Google OAuth client id; unset leaves the sheet path off"),
    var("google_client_secret", "with the id: this or its ARN", "its secret"),
    var(
        "google_client_secret_arn",
        "with the id: this or the value",
        "a Secrets Manager secret holding it, read at cold start",
    ),
    var("sheets_api_url", "no", "the Google Sheets API"),
    var("google_token_url", "no", "the Google OAuth token endpoint"),
    var(
        "flush_queue_url",
        "yes",
        "the SQS standard queue of flush requests (not FIFO: a flush's wait is its DelaySeconds)",
    ),
    var("sqs_endpoint", "no", "a local SQS endpoint instead of AWS (`sluice dev`)"),
];

#[derive(Deserialize, Serialize)]
#[serde(default)]
pub(crate) struct SheetVars {
    google_client_id: Option<String>,
    google_client_secret: Option<String>,
    google_client_secret_arn: Option<String>,
    sheets_api_url: String,
    google_token_url: String,
    pub(crate) flush_queue_url: Option<String>,
    pub(crate) sqs_endpoint: Option<String>,
}

impl Default for SheetVars {
    fn default() -> Self {
        Self {
            google_client_id: None,
            google_client_secret: None,
            google_client_secret_arn: None,
            sheets_api_url: PRODUCTION_API_BASE_URL.to_owned(),
            google_token_url: PRODUCTION_TOKEN_URL.to_owned(),
            flush_queue_url: None,
            sqs_endpoint: None,
        }
    }
}

pub(crate) fn defaults() -> serde_json::Value {
    serde_json::to_value(SheetVars::default()).unwrap_or_default()
}

/// The Google OAuth client the flush acts as.
#[derive(Debug, Clone)]
pub struct GoogleClient {
    /// Holds an empty secret until the caller puts the real one in.
    pub config: SheetsConfig,
    pub secret: SecretSetting,
}

/// The Google client from `source`; `None` when no client id is set.
pub fn google_client(source: &EnvSource) -> Result<Option<GoogleClient>, ConfigError> {
    let v: SheetVars = source.extract()?;
    google(&v)
}

pub(crate) fn google(v: &SheetVars) -> Result<Option<GoogleClient>, ConfigError> {
    let Some(client_id) = v.google_client_id.clone() else { return Ok(None) };
    let secret = either(
        "google_client_secret",
        v.google_client_secret.clone(),
        "google_client_secret_arn",
        v.google_client_secret_arn.clone(),
    )?
    .ok_or_else(|| ConfigError::missing(crate::variable("google_client_secret")))?;
    let value = match &secret {
        SecretSetting::Value(value) => value.clone(),
        SecretSetting::Arn(_) => Secret::new(String::new()),
    };
    let config = SheetsConfig::new(client_id, value)
        .with_api_base_url(v.sheets_api_url.clone())
        .map_err(|e| ConfigError::invalid("sheets_api_url", e.to_string()))?
        .with_token_url(v.google_token_url.clone())
        .map_err(|e| ConfigError::invalid("google_token_url", e.to_string()))?;
    Ok(Some(GoogleClient { config, secret }))
}
