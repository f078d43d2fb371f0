//! Where alerts go: a Slack-compatible incoming webhook, read by every
//! function that can raise one (the flush: a rejected credential, a sheet
//! gone or its flushes delayed; the token step, fetch and the mall drain:
//! a parked mall, its fetches failing).

use crate::secret_setting::{SecretSetting, either};
use crate::variables::{Variable, var};
use crate::{ConfigError, EnvSource};
use serde::{Deserialize, Serialize};

pub(crate) const VARIABLES: &[Variable] = &[
    var("alert_url", "no", "Slack-compatible incoming webhook for alerts"),
    var("alert_url_secret_arn", "no", "a Secrets Manager secret holding the alert URL instead"),
];

#[derive(Default, Deserialize, Serialize)]
#[serde(default)]
struct AlertVars {
    alert_url: Option<String>,
    alert_url_secret_arn: Option<String>,
}

pub(crate) fn defaults() -> serde_json::Value {
    serde_json::to_value(AlertVars::default()).unwrap_or_default()
}

/// The alert webhook from `source`; `None` leaves alerts as log lines.
pub fn alert_url(source: &EnvSource) -> Result<Option<SecretSetting>, ConfigError> {
    let v: AlertVars = source.extract()?;
    either("alert_url", v.alert_url, "alert_url_secret_arn", v.alert_url_secret_arn)
}
