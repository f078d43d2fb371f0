//! Which Redis a command talks to: `SLUICE_REDIS_URL` when set, otherwise a
//! private `redis-server` started for the run and stopped when it ends, so a
//! fresh machine needs only the `redis-server` package.

use sluice_redis::{RedisProcess, ServerError, ServerOptions};

/// A Redis to talk to, and the private server behind it if we started one.
#[derive(Debug)]
pub(crate) struct RedisTarget {
    pub(crate) client: redis::Client,
    pub(crate) description: String,
    /// Kept alive for the run; dropping it stops the server.
    _private: Option<RedisProcess>,
}

impl RedisTarget {
    /// `SLUICE_REDIS_URL`, or a private server that keeps nothing.
    pub(crate) fn from_env() -> Result<Self, String> {
        Self::from_env_or_private(None)
    }

    /// `SLUICE_REDIS_URL`, or a private server; with `data_dir`, the
    /// private server keeps its data there (append-only file) across runs.
    pub(crate) fn from_env_or_private(data_dir: Option<std::path::PathBuf>) -> Result<Self, String> {
        match std::env::var("SLUICE_REDIS_URL") {
            Ok(url) if !url.is_empty() => {
                let client = redis::Client::open(url.as_str())
                    .map_err(|e| format!("SLUICE_REDIS_URL is not a valid Redis URL: {e}"))?;
                Ok(Self { client, description: "Redis from SLUICE_REDIS_URL".to_owned(), _private: None })
            }
            _ => {
                let kept = data_dir.as_ref().map(|d| format!(", data in {}", d.display())).unwrap_or_default();
                let options = ServerOptions { data_dir, ..ServerOptions::default() };
                let server = RedisProcess::start(options).map_err(|e| match e {
                    ServerError::NotInstalled => format!("{e}, or set SLUICE_REDIS_URL to use a running Redis"),
                    e => e.to_string(),
                })?;
                let client = redis::Client::open(server.url()).map_err(|e| e.to_string())?;
                let description = format!("private redis-server on 127.0.0.1:{}{kept}", server.port());
                Ok(Self { client, description, _private: Some(server) })
            }
        }
    }
}
