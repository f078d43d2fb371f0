//! Which Redis a command talks to. Commands that run things (`dev`,
//! `demo`) use `SLUICE_REDIS_URL` when set, otherwise a private
//! `redis-server` started for the run and stopped when it ends, so a fresh
//! machine needs only the `redis-server` package. Commands that inspect or
//! seed state (`trace`, `tokens`) use `SLUICE_REDIS_URL`, or the Redis of a
//! `sluice dev` running in this directory.

use crate::dev_state::{DEV_STATE_FILE, DevState};
use sluice_redis::{Keyspace, RedisProcess, ServerError, ServerOptions};

/// A Redis to talk to, and the private server behind it if we started one.
#[derive(Debug)]
pub(crate) struct RedisTarget {
    pub(crate) client: redis::Client,
    /// The URL, for other commands to reach the same Redis.
    pub(crate) url: String,
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
                Ok(Self { client, url, description: "Redis from SLUICE_REDIS_URL".to_owned(), _private: None })
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
                Ok(Self { client, url: server.url(), description, _private: Some(server) })
            }
        }
    }
}

/// The Redis and key prefix of the state an inspecting command reads.
#[derive(Debug)]
pub(crate) struct StateRedis {
    pub(crate) client: redis::Client,
    pub(crate) keyspace: Keyspace,
}

impl StateRedis {
    /// [`StateRedis::locate`], or the exit code of a usage error (2) after
    /// saying what is missing: with no Redis named, the command cannot run.
    pub(crate) fn locate_or_usage_error() -> Result<Self, std::process::ExitCode> {
        Self::locate().map_err(|e| {
            eprintln!("sluice: {e}");
            std::process::ExitCode::from(2)
        })
    }

    /// `SLUICE_REDIS_URL` (with `SLUICE_KEY_PREFIX`, default `sluice:`), or
    /// the Redis of the `sluice dev` running in this directory.
    pub(crate) fn locate() -> Result<Self, String> {
        let (url, prefix) = match std::env::var("SLUICE_REDIS_URL") {
            Ok(url) if !url.is_empty() => (
                url,
                std::env::var("SLUICE_KEY_PREFIX").unwrap_or_else(|_| sluice_redis::keyspace::DEFAULT_PREFIX.into()),
            ),
            _ => match DevState::read(&DevState::path()) {
                Some(state) => (state.redis_url, state.key_prefix),
                None => {
                    return Err(format!(
                        "no Redis to use: set SLUICE_REDIS_URL, or start `sluice dev` in this directory (it writes {DEV_STATE_FILE})"
                    ));
                }
            },
        };
        let client = redis::Client::open(url.as_str()).map_err(|e| format!("not a valid Redis URL: {e}"))?;
        let keyspace = Keyspace::new(prefix).map_err(|e| e.to_string())?;
        Ok(Self { client, keyspace })
    }

    pub(crate) async fn connection(&self) -> Result<redis::aio::MultiplexedConnection, String> {
        self.client.get_multiplexed_async_connection().await.map_err(|e| {
            format!("cannot reach Redis ({e}); if {DEV_STATE_FILE} is left from a `sluice dev` that was killed, start it again")
        })
    }
}
