//! The Cafe24 app the shop functions act as: its client id and secret
//! (the secret is used by token refresh), the API's base URL and version.

use crate::secret_setting::{SecretSetting, either};
use crate::variables::part;
use crate::{ConfigError, EnvSource};
use sluice_cafe24::{BaseUrlTemplate, Cafe24Config, Secret};

part! {
    struct Cafe24Vars {
        cafe24_client_id: Option<String> = None, "yes", "the Cafe24 app's client id";
        cafe24_client_secret: Option<String> = None, "this or its ARN", "the Cafe24 app's client secret (token refresh)";
        cafe24_client_secret_arn: Option<String> = None, "this or the value",
            "a Secrets Manager secret holding it, read at cold start";
        cafe24_base_url: String = BaseUrlTemplate::production().as_str().to_owned(), "no", "base URL template";
        cafe24_api_version: String = sluice_cafe24::DEFAULT_API_VERSION.to_owned(), "no",
            "`X-Cafe24-Api-Version`, a release date like `2025-12-01`";
    }
}

pub fn cafe24_config(source: &EnvSource) -> Result<(Cafe24Config, SecretSetting), ConfigError> {
    let v: Cafe24Vars = source.extract()?;
    let client_id = v.cafe24_client_id.ok_or_else(|| ConfigError::missing("cafe24_client_id"))?;
    let secret =
        either("cafe24_client_secret", v.cafe24_client_secret, "cafe24_client_secret_arn", v.cafe24_client_secret_arn)?
            .ok_or_else(|| ConfigError::missing("cafe24_client_secret"))?;
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
