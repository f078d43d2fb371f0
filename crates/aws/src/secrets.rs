//! [`SecretsReader`]: a secret's current value from Secrets Manager, read
//! when a function starts rather than resolved into its environment at
//! deploy time, so `put-secret-value` reaches the functions without a
//! redeploy and no value shows in their configuration.
//!
//! The client comes from the SDK's default chain, which also honours
//! `AWS_ENDPOINT_URL_SECRETS_MANAGER`: how tests point it at a local
//! stand-in (moto).

use crate::api_calls::ApiCall;
use aws_sdk_secretsmanager::config::{BehaviorVersion, Credentials, Region};

/// Why a secret could not be read. Never carries the value.
#[derive(Debug, thiserror::Error)]
pub enum SecretsError {
    #[error("Secrets Manager refused or failed GetSecretValue for {arn}: {message}")]
    Call { arn: String, message: String },
    #[error("the secret {arn} has no string value")]
    NotAString { arn: String },
    #[error("the secret {arn} is not a JSON object with a string field {field:?}")]
    NoField { arn: String, field: String },
}

/// Reads secrets by ARN.
#[derive(Debug, Clone)]
pub struct SecretsReader {
    client: aws_sdk_secretsmanager::Client,
}

impl SecretsReader {
    /// What [`read`](Self::read) and [`read_field`](Self::read_field) call
    /// (`crate::api_calls`; `tests/secrets.rs` records it).
    pub const CALLS: &[ApiCall] = &[ApiCall::new("GetSecretValue", "secretsmanager:GetSecretValue")];

    /// A reader configured as the SDK's default chain says (region,
    /// credentials, endpoint override).
    pub async fn from_env() -> Self {
        Self { client: aws_sdk_secretsmanager::Client::new(&crate::client::aws_defaults().await) }
    }

    /// A reader of the Secrets Manager stand-in at `url` (tests), signing
    /// with placeholder credentials as the local SQS client does.
    pub fn with_endpoint(url: &str) -> Self {
        let config = aws_sdk_secretsmanager::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new(crate::client::LOCAL_REGION))
            .endpoint_url(url)
            .credentials_provider(Credentials::new("sluice-local", "sluice-local", None, None, "sluice-local"))
            .http_client(crate::client::https_client())
            .build();
        Self { client: aws_sdk_secretsmanager::Client::from_conf(config) }
    }

    /// The secret's string value.
    pub async fn read(&self, arn: &str) -> Result<String, SecretsError> {
        let out = self.client.get_secret_value().secret_id(arn).send().await.map_err(|e| SecretsError::Call {
            arn: arn.to_owned(),
            message: aws_sdk_secretsmanager::error::DisplayErrorContext(&e).to_string(),
        })?;
        out.secret_string.ok_or_else(|| SecretsError::NotAString { arn: arn.to_owned() })
    }

    /// The string `field` of a secret holding a JSON object (as
    /// `GenerateSecretString` with a template makes them).
    pub async fn read_field(&self, arn: &str, field: &str) -> Result<String, SecretsError> {
        let text = self.read(arn).await?;
        let no_field = || SecretsError::NoField { arn: arn.to_owned(), field: field.to_owned() };
        let value: serde_json::Value = serde_json::from_str(&text).map_err(|_| no_field())?;
        value.get(field).and_then(|v| v.as_str()).map(str::to_owned).ok_or_else(no_field)
    }
}
