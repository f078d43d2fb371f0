//! The PostgreSQL the drain writes to: `sluice dev`, `sluice db migrate`,
//! the demo, and the drain function, which reads the URL from Secrets
//! Manager (it holds a password).

use crate::secret_setting::{SecretSetting, either};
use crate::variables::part;
use crate::{ConfigError, EnvSource};

part! {
    struct DatabaseVars {
        database_url: Option<String> = None, "the drain function, unless the ARN is set",
            "PostgreSQL the snapshots are drained into, `postgres://user:password@host:5432/db` (sluice dev and sluice trace: database `sluice` at 127.0.0.1:5432, or PGHOST/PGPORT, when reachable)";
        database_url_secret_arn: Option<String> = None, "no",
            "a Secrets Manager secret holding that URL, read at cold start";
    }
}

pub fn database_url(source: &EnvSource) -> Result<Option<SecretSetting>, ConfigError> {
    let vars: DatabaseVars = source.extract()?;
    let url = either("database_url", vars.database_url, "database_url_secret_arn", vars.database_url_secret_arn)?;
    if let Some(SecretSetting::Value(url)) = &url {
        let scheme = url.expose().split_once("://").map(|(scheme, _)| scheme);
        if !matches!(scheme, Some("postgres" | "postgresql")) {
            return Err(ConfigError::invalid("database_url", "expected postgres://user:password@host:port/database"));
        }
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_or_an_arn_and_never_both() {
        let url = EnvSource::from_pairs([("SLUICE_DATABASE_URL", "postgres://u:p@db:5432/app")]);
        assert!(matches!(database_url(&url), Ok(Some(SecretSetting::Value(_)))));
        let arn =
            EnvSource::from_pairs([("SLUICE_DATABASE_URL_SECRET_ARN", "arn:aws:secretsmanager:eu-west-1:1:secret:db")]);
        assert!(matches!(database_url(&arn), Ok(Some(SecretSetting::Arn(_)))));
        assert_eq!(database_url(&EnvSource::from_pairs([("SLUICE_STAGE", "dev")])), Ok(None));
        let both = url.with("database_url_secret_arn", Some("arn:aws:secretsmanager:eu-west-1:1:secret:db".into()));
        assert!(database_url(&both).unwrap_err().to_string().contains("not both"));
    }

    #[test]
    fn a_url_that_is_not_postgres_is_refused_without_showing_it() {
        let redis = EnvSource::from_pairs([("SLUICE_DATABASE_URL", "redis://:hunter2@db:6379")]);
        let error = database_url(&redis).unwrap_err().to_string();
        assert!(error.starts_with("SLUICE_DATABASE_URL is invalid"), "{error}");
        assert!(!error.contains("hunter2"), "the password is never shown: {error}");
    }
}
