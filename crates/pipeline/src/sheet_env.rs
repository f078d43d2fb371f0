//! The sheet path's environment variables (part of [`PipelineEnv`]): the
//! Google OAuth client and endpoints, the quotas, the batching settings
//! and the alert webhook; and [`PipelineEnv::sheet`], the sheet service
//! built from them. Without `SLUICE_GOOGLE_CLIENT_ID` the sheet path is
//! off: the service has no Google client, and a flush fails saying so.
//!
//! [`PipelineEnv`]: crate::PipelineEnv

use crate::config::SheetConfig;
use crate::env_config::{EnvError, StartError, Vars, invalid};
use crate::flush_trigger::FlushTrigger;
use crate::{PipelineEnv, ServiceCore, SheetService};
use redis::aio::ConnectionManager;
use sluice_cafe24::Secret;
use sluice_sheets::values::ValueInputOption;
use sluice_sheets::{SheetsClient, SheetsConfig};
use std::sync::Arc;
use std::time::Duration;

pub const GOOGLE_CLIENT_ID: &str = "SLUICE_GOOGLE_CLIENT_ID";
pub const GOOGLE_CLIENT_SECRET: &str = "SLUICE_GOOGLE_CLIENT_SECRET";
pub const SHEETS_API_URL: &str = "SLUICE_SHEETS_API_URL";
pub const GOOGLE_TOKEN_URL: &str = "SLUICE_GOOGLE_TOKEN_URL";
pub const GOOGLE_PROJECT: &str = "SLUICE_GOOGLE_PROJECT";
pub const WRITES_PER_MINUTE_PER_CREDENTIAL: &str = "SLUICE_SHEETS_WRITES_PER_MINUTE";
pub const WRITES_PER_MINUTE_PER_PROJECT: &str = "SLUICE_SHEETS_PROJECT_WRITES_PER_MINUTE";
pub const QUOTA_MARGIN_MS: &str = "SLUICE_SHEETS_QUOTA_MARGIN_MS";
pub const MAX_ROWS: &str = "SLUICE_SHEETS_MAX_ROWS";
pub const FLUSH_THRESHOLD: &str = "SLUICE_SHEETS_FLUSH_THRESHOLD";
pub const MAX_DELAY_SECS: &str = "SLUICE_SHEETS_MAX_DELAY_SECS";
pub const VALUE_INPUT: &str = "SLUICE_SHEETS_VALUE_INPUT";
pub const ALERT_URL: &str = "SLUICE_ALERT_URL";

impl PipelineEnv {
    /// The sheet service over `core`, asking for flushes through `trigger`,
    /// with the Google Sheets client if one is configured.
    pub fn sheet(
        &self,
        core: ServiceCore<ConnectionManager>,
        trigger: Arc<dyn FlushTrigger>,
    ) -> Result<SheetService<ConnectionManager>, StartError> {
        let service = SheetService::new(core, trigger).with_alert_url(self.alert_url.clone());
        Ok(match &self.sheets {
            Some(sheets) => service.with_sheets(SheetsClient::new(sheets.clone()).map_err(StartError::Sheets)?),
            None => service,
        })
    }
}

/// The sheet path's settings from the environment.
pub(crate) struct SheetEnv {
    pub sheets: Option<SheetsConfig>,
    pub settings: SheetConfig,
    pub alert_url: Option<String>,
}

pub(crate) fn read(vars: &Vars<'_>) -> Result<SheetEnv, EnvError> {
    let sheets = match vars.get(GOOGLE_CLIENT_ID) {
        None => None,
        Some(client_id) => {
            let secret = vars.required(GOOGLE_CLIENT_SECRET, "the Google OAuth client's secret")?;
            let mut config = SheetsConfig::new(client_id, Secret::new(secret));
            if let Some(url) = vars.get(SHEETS_API_URL) {
                config = config.with_api_base_url(url).map_err(|e| invalid(SHEETS_API_URL, e.to_string()))?;
            }
            if let Some(url) = vars.get(GOOGLE_TOKEN_URL) {
                config = config.with_token_url(url).map_err(|e| invalid(GOOGLE_TOKEN_URL, e.to_string()))?;
            }
            Some(config)
        }
    };
    let defaults = SheetConfig::default();
    let minute = Duration::from_secs(60);
    let value_input = match vars.get(VALUE_INPUT) {
        None => defaults.value_input,
        Some(text) => ValueInputOption::parse(&text)
            .ok_or_else(|| invalid(VALUE_INPUT, format!("{text:?} is not USER_ENTERED or RAW")))?,
    };
    let settings = SheetConfig {
        google_project: vars.get(GOOGLE_PROJECT).unwrap_or(defaults.google_project.clone()),
        per_credential: vars
            .whole(WRITES_PER_MINUTE_PER_CREDENTIAL, 1, None)?
            .map_or(defaults.per_credential, |n| (n, minute)),
        per_project: vars.whole(WRITES_PER_MINUTE_PER_PROJECT, 1, None)?.map_or(defaults.per_project, |n| (n, minute)),
        quota_margin: vars
            .whole(QUOTA_MARGIN_MS, 0, Some(10_000))?
            .map_or(defaults.quota_margin, |ms: u64| Duration::from_millis(ms)),
        max_rows: vars.whole(MAX_ROWS, 1, Some(100_000))?.unwrap_or(defaults.max_rows),
        flush_threshold: vars.whole(FLUSH_THRESHOLD, 1, None)?.unwrap_or(defaults.flush_threshold),
        max_delay: vars.secs(MAX_DELAY_SECS, 0)?.unwrap_or(defaults.max_delay).min(Duration::from_secs(900)),
        value_input,
        ..defaults
    };
    Ok(SheetEnv { sheets, settings, alert_url: vars.get(ALERT_URL) })
}
