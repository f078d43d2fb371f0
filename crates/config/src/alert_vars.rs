//! Where alerts go: a Slack-compatible incoming webhook, read by every
//! function that can raise one (the flush: a rejected credential, a sheet
//! gone or its flushes delayed; the token step, fetch and the catch-up:
//! a parked mall, its fetches failing).

use crate::secret_setting::{SecretSetting, either};
use crate::variables::part;
use crate::{ConfigError, EnvSource};

part! {
    struct AlertVars {
        alert_url: Option<String> = None, "no", "Slack-compatible incoming webhook for alerts";
        alert_url_secret_arn: Option<String> = None, "no",
            "a Secrets Manager secret holding the alert URL instead";
    }
}

pub fn alert_url(source: &EnvSource) -> Result<Option<SecretSetting>, ConfigError> {
    let v: AlertVars = source.extract()?;
    either("alert_url", v.alert_url, "alert_url_secret_arn", v.alert_url_secret_arn)
}
