//! The Cafe24 app the shop functions act as: its client id and secret
//! (the secret is used by token refresh), the API's base URL and version.

use crate::secret_setting::{SecretSetting, either};
use crate::variables::{Variable, var};
use crate::{ConfigError, EnvSource};
use serde::{Deserialize, Serialize};
use sluice_cafe24::{BaseUrlTemplate, Cafe24Config, Secret};

pub(crate) const VARIABLES: &[Variable] = &[
    var("cafe24_client_id", "yes", "the Cafe24 app's client id"),
    var("cafe24_client_secret", "this or its ARN", "the Cafe24 app's client secret (token refresh)"),
    var("cafe24_client_secret_arn", "this or the value", "a Secrets Manager secret holding it, read at cold start"),
    var("cafe24_base_url", "no", "base URL template"),
    var("cafe24_api_version", "no", "`X-Cafe24-Api-Version`, a release date like `2025-12-01`"),
];

#[derive(Deserialize, Serialize)]
#[serde(default)]
struct Cafe24Vars {
    cafe24_client_id: Option<String>,
    cafe24_client_secret: Option<String>,
    cafe24_client_secret_arn: Option<String>,
    cafe24_base_url: String,
    cafe24_api_version: String,
}

impl Default for Cafe24Vars {
    fn default() -> Self {
        Self {
            cafe24_client_id: None,
            cafe24_client_secret: None,
            cafe24_client_secret_arn: None,
            cafe24_base_url: BaseUrlTemplate::production().as_str().to_owned(),
            cafe24_api_version: sluice_cafe24::DEFAULT_API_VERSION.to_owned(),
        }
    }
}

pub(crate) fn defaults() -> serde_json::Value {
    serde_json::to_value(Cafe24Vars::default()).unwrap_or_default()
}

/// The Cafe24 app from `source`, and where its client secret comes from.
/// The config holds an empty secret until the caller puts the real one in
/// (at once for [`SecretSetting::Value`], from Secrets Manager for an ARN).
pub fn cafe24_config(source: &EnvSource) -> Result<(Cafe24Config, SecretSetting), ConfigError> {
    let v: Cafe24Vars = source.extract()?;
    let client_id = v.cafe24_client_id.ok_or_else(|| ConfigError::missing(crate::variable("cafe24_client_id")))?;
    let secret =
        either("cafe24_client_secret", v.cafe24_client_secret, "cafe24_client_secret_arn", v.cafe24_client_secret_arn)?
            .ok_or_else(|| ConfigError::missing(crate::variable("cafe24_client_secret")))?;
    let base_url =
        BaseUrlTemplate::new(v.cafe24_base_url).map_err(|e| ConfigError::invalid("cafe24_base_url", e.to_string()))?;
    let version = v.cafe24_api_version;
    // Cafe24 names API versions by release date; anything else would be
    // refused on every call, so it is refused here.
    let is_date = version.len() == 10
        && version.bytes().enumerate().all(|(i, b)| if i == 4 || i == 7 { b == b'-' } else { b.is_ascii_digit() });
    if !is_date {
        return Err(ConfigError::invalid("cafe24_api_version", format!("{version:?} is not a date like 2025-12-01")));
    }
    let mut config = Cafe24Config::new(client_id, Secret::new(String::new())).with_base_url(base_url);
    config.api_version = version;
    if let SecretSetting::Value(value) = &secret {
        config.client_secret = value.clone();
    }
    Ok((config, secret))
}
