//! [`SecretSetting`]: a secret given either as its value (`sluice dev`,
//! tests) or as the ARN of a Secrets Manager secret that the function reads
//! at cold start, so rotating it needs no redeploy and its value never
//! shows in the function's configuration.

use crate::ConfigError;
use sluice_cafe24::Secret;

/// Where a secret comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretSetting {
    /// The value itself, from `SLUICE_<NAME>` (redacted in `Debug`).
    Value(Secret),
    /// A Secrets Manager secret, from `SLUICE_<NAME>_SECRET_ARN` (or
    /// `SLUICE_<NAME>_ARN` where the name ends in `_SECRET`).
    Arn(String),
}

/// The setting of the secret read from `field` (its value) or `arn_field`
/// (its ARN): at most one of the two may be set.
pub(crate) fn either(
    field: &str,
    value: Option<String>,
    arn_field: &str,
    arn: Option<String>,
) -> Result<Option<SecretSetting>, ConfigError> {
    match (value, arn) {
        (Some(_), Some(_)) => {
            Err(ConfigError::invalid(field, format!("set it or {}, not both", crate::variable(arn_field))))
        }
        (Some(value), None) => Ok(Some(SecretSetting::Value(Secret::new(value)))),
        (None, Some(arn)) if !arn.starts_with("arn:") => {
            Err(ConfigError::invalid(arn_field, format!("{arn:?} is not an ARN (arn:aws:secretsmanager:…)")))
        }
        (None, Some(arn)) => Ok(Some(SecretSetting::Arn(arn))),
        (None, None) => Ok(None),
    }
}
