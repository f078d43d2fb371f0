//! Secrets a function reads at cold start, through one [`SecretsReader`]
//! per execution environment (the SDK client is built on first use, so a
//! function whose secrets are all values never configures it).

use sluice_aws::{SecretsError, SecretsReader};
use sluice_cafe24::Secret;
use tokio::sync::OnceCell;

static READER: OnceCell<SecretsReader> = OnceCell::const_new();

async fn reader() -> &'static SecretsReader {
    READER.get_or_init(SecretsReader::from_env).await
}

/// The secret `arn`'s value.
pub(crate) async fn read(arn: &str) -> Result<Secret, SecretsError> {
    Ok(Secret::new(reader().await.read(arn).await?))
}

/// The string `field` of the JSON secret `arn`.
pub(crate) async fn read_field(arn: &str, field: &str) -> Result<Secret, SecretsError> {
    Ok(Secret::new(reader().await.read_field(arn, field).await?))
}
