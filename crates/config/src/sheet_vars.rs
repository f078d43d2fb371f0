//! The sheet functions' variables: the Google OAuth client (without it the
//! sheet path is off) and the flush queue (alerts: `alert_vars`).

use crate::secret_setting::{SecretSetting, either};
use crate::variables::part;
use crate::{ConfigError, EnvSource};
use sluice_cafe24::Secret;
use sluice_sheets::SheetsConfig;
use sluice_sheets::config::{PRODUCTION_API_BASE_URL, PRODUCTION_TOKEN_URL};

part! {
    pub(crate) struct SheetVars {
        google_client_id: Option<String> = None, "for the flush",
            "the Google OAuth client id; unset leaves the sheet path off";
        google_client_secret: Option<String> = None, "with the id: this or its ARN", "its secret";
        google_client_secret_arn: Option<String> = None, "with the id: this or the value",
            "a Secrets Manager secret holding it, read at cold start";
        sheets_api_url: String = PRODUCTION_API_BASE_URL.to_owned(), "no", "the Google Sheets API";
        google_token_url: String = PRODUCTION_TOKEN_URL.to_owned(), "no", "the Google OAuth token endpoint";
        pub(crate) flush_queue_url: Option<String> = None, "yes",
            "the SQS standard queue of flush requests (not FIFO: a flush's wait is its DelaySeconds)";
        pub(crate) sqs_endpoint: Option<String> = None, "no", "a local SQS endpoint instead of AWS (`sluice dev`)";
    }
}

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
    .ok_or_else(|| ConfigError::missing("google_client_secret"))?;
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
