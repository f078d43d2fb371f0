//! Which Redis a command talks to. Commands that run things (`dev`,
//! `demo`) use `SLUICE_REDIS_URL` when set, otherwise a private
//! `redis-server` started for the run and stopped when it ends, so a fresh
//! machine needs only the `redis-server` package. Commands that inspect or
//! seed state (`trace`, `tokens`) use `SLUICE_REDIS_URL`, or the Redis of a
//! `sluice dev` running in this directory.

use crate::dev_state::{DEV_STATE_FILE, DevState};
use crate::usage;
use anyhow::{Context, anyhow};
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
    pub(crate) fn from_env() -> anyhow::Result<Self> {
        Self::from_env_or_private(None)
    }

    /// `SLUICE_REDIS_URL`, or a private server; with `data_dir`, the
    /// private server keeps its data there (append-only file) across runs.
    pub(crate) fn from_env_or_private(data_dir: Option<std::path::PathBuf>) -> anyhow::Result<Self> {
        match named_redis()? {
            Some(common) => {
                let url = common.redis_url.expose().to_owned();
                let client = redis::Client::open(url.as_str()).context("SLUICE_REDIS_URL is not a valid Redis URL")?;
                Ok(Self { client, url, description: "Redis from SLUICE_REDIS_URL".to_owned(), _private: None })
            }
            None => {
                let kept = data_dir.as_ref().map(|d| format!(", data in {}", d.display())).unwrap_or_default();
                let options = ServerOptions { data_dir, ..ServerOptions::default() };
                let server = RedisProcess::start(options).map_err(|e| match e {
                    ServerError::NotInstalled => anyhow!("{e}, or set SLUICE_REDIS_URL to use a running Redis"),
                    e => e.into(),
                })?;
                let client = redis::Client::open(server.url())?;
                let description = format!("private redis-server on 127.0.0.1:{}{kept}", server.port());
                Ok(Self { client, url: server.url(), description, _private: Some(server) })
            }
        }
    }
}

/// The Redis `SLUICE_REDIS_URL` names, if set (checked as the functions check it).
fn named_redis() -> anyhow::Result<Option<sluice_config::Common>> {
    Ok(sluice_config::Common::read_optional(&sluice_config::EnvSource::from_process())?)
}

/// The Redis and key prefix of the state an inspecting command reads.
#[derive(Debug)]
pub(crate) struct StateRedis {
    pub(crate) client: redis::Client,
    pub(crate) keyspace: Keyspace,
}

impl StateRedis {
    /// `SLUICE_REDIS_URL` (with `SLUICE_KEY_PREFIX`, default `sluice:`), or
    /// the Redis of the `sluice dev` running in this directory. With no Redis
    /// named the command cannot run: a usage error of `who`.
    pub(crate) fn locate(who: &'static str) -> anyhow::Result<Self> {
        let named = sluice_config::Common::read_optional(&sluice_config::EnvSource::from_process())
            .map_err(|e| usage(who, e))?;
        let (url, prefix) = match named {
            Some(common) => (common.redis_url.expose().to_owned(), common.keyspace.prefix().to_owned()),
            None => match DevState::read(&DevState::path()) {
                Some(state) => (state.redis_url, state.key_prefix),
                None => {
                    return Err(usage(
                        who,
                        format!(
                            "no Redis to use: set SLUICE_REDIS_URL, or start `sluice dev` in this directory (it writes {DEV_STATE_FILE})"
                        ),
                    ));
                }
            },
        };
        let client =
            redis::Client::open(url.as_str()).map_err(|e| usage(who, format!("not a valid Redis URL: {e}")))?;
        let keyspace = Keyspace::new(prefix).map_err(|e| usage(who, e))?;
        Ok(Self { client, keyspace })
    }

    pub(crate) async fn connection(&self) -> anyhow::Result<redis::aio::MultiplexedConnection> {
        self.client.get_multiplexed_async_connection().await.map_err(|e| {
            anyhow!("cannot reach Redis ({e}); if {DEV_STATE_FILE} is left from a `sluice dev` that was killed, start it again")
        })
    }
}
