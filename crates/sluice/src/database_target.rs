//! The PostgreSQL an operator command reads (`sluice trace`, `sluice
//! status`): `SLUICE_DATABASE_URL` when set. Without it, those commands say
//! nothing about the database; they never fail for want of one.

use sluice_config::{EnvSource, SecretSetting, database_url};
use sqlx::PgPool;

/// A pool on the configured database, `None` when none is configured. A
/// configured one that cannot be reached is an error naming it.
pub(crate) async fn optional_pool(who: &'static str) -> anyhow::Result<Option<PgPool>> {
    let url = match database_url(&EnvSource::from_process()).map_err(|e| crate::usage(who, e))? {
        Some(SecretSetting::Value(url)) => url.expose().to_owned(),
        _ => return Ok(None),
    };
    Ok(Some(sluice_sink::connect(&url).await?))
}
