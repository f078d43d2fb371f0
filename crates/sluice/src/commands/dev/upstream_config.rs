//! The upstreams `sluice dev` talks to, from its flags laid over the
//! `SLUICE_*` settings: the Cafe24 app (or the embedded sandbox's) and the
//! Google client. Secrets are values here: `sluice dev` reads nothing from
//! AWS.

use super::Args;
use anyhow::{Context, bail};
use sluice_cafe24::{BaseUrlTemplate, Cafe24Config, Secret};
use sluice_config::{EnvSource, SecretSetting};
use sluice_sandbox::{Cafe24Sandbox, Cafe24SandboxConfig};
use sluice_sheets::SheetsConfig;

/// The `SLUICE_*` variables with the flags that override them laid over:
/// the same settings the functions read (`sluice_config`).
pub(super) fn settings(args: &Args) -> EnvSource {
    EnvSource::from_process()
        .with("key_prefix", Some(args.key_prefix.clone()))
        .with("cafe24_base_url", Some(args.cafe24_base_url.clone()))
        .with("cafe24_client_id", args.cafe24_client_id.clone())
        .with("google_client_id", args.google_client_id.clone())
        .with("sheets_api_url", args.sheets_api_url.clone())
        .with("google_token_url", args.google_token_url.clone())
        .with("google_project", args.google_project.clone())
        .with("alert_url", args.alert_url.clone())
}

/// A secret `sluice dev` can use: a value (it reads nothing from AWS).
fn secret_value(setting: SecretSetting, name: &str) -> anyhow::Result<Secret> {
    match setting {
        SecretSetting::Value(value) => Ok(value),
        SecretSetting::Arn(_) => bail!("{name}_SECRET_ARN: sluice dev reads no secrets from AWS; set {name} instead"),
    }
}

/// The Google client from the settings; without a client id, one with
/// none (the sheet path then waits for `sluice credentials set` to matter).
pub(super) fn sheets_config(env: &EnvSource) -> anyhow::Result<SheetsConfig> {
    if let Some(google) = sluice_config::google_client(env)? {
        let secret = secret_value(google.secret, "SLUICE_GOOGLE_CLIENT")?;
        return Ok(SheetsConfig { client_secret: secret, ..google.config });
    }
    let api = env.get("sheets_api_url").unwrap_or(sluice_sheets::config::PRODUCTION_API_BASE_URL);
    let token = env.get("google_token_url").unwrap_or(sluice_sheets::config::PRODUCTION_TOKEN_URL);
    SheetsConfig::new("", Secret::new(String::new()))
        .with_api_base_url(api)
        .context("--sheets-api-url")?
        .with_token_url(token)
        .context("--google-token-url")
}

/// The sandbox's app with `--sandbox-mall`; else the Cafe24 app of the
/// settings, or none without a client id.
pub(super) fn cafe24_config(env: &EnvSource, sandbox: Option<&Cafe24Sandbox>) -> anyhow::Result<Cafe24Config> {
    if sandbox.is_some() {
        let defaults = Cafe24SandboxConfig::default();
        let template = BaseUrlTemplate::new(sandbox.map(Cafe24Sandbox::base_url_template).unwrap_or_default())?;
        return Ok(Cafe24Config::new(defaults.client_id, defaults.client_secret).with_base_url(template));
    }
    if env.get("cafe24_client_id").is_none() {
        let template = env.get("cafe24_base_url").unwrap_or_default();
        let template = BaseUrlTemplate::new(template).context("--cafe24-base-url")?;
        return Ok(Cafe24Config::new("", Secret::new(String::new())).with_base_url(template));
    }
    let (config, secret) = sluice_config::cafe24_config(env)?;
    Ok(Cafe24Config { client_secret: secret_value(secret, "SLUICE_CAFE24_CLIENT")?, ..config })
}
