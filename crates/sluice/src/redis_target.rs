//! Which Redis a command talks to. Commands that run things (`dev`,
//! `demo`) use `SLUICE_REDIS_URL` when set, otherwise a private
//! `redis-server` started for the run and stopped when it ends, so a fresh
//! machine needs only the `redis-server` package. Commands that inspect or
//! seed state (`trace`, `tokens`) use `SLUICE_REDIS_URL`, or the Redis of a
//! `sluice dev` running in this directory. Every one connects through
//! `sluice_redis::connect`, as the functions do: standalone or cluster
//! (`SLUICE_REDIS_CLUSTER`), plain or TLS (`SLUICE_REDIS_CA_FILE` for a
//! private CA); the password is the URL's (the CLI reads no secret).

use crate::dev_state::{DEV_STATE_FILE, DevState};
use crate::usage;
use anyhow::{Context, anyhow};
use sluice_private_servers::{DeploymentKind, PRIVATE_USER, PrivateRedis, ServerError, ServerOptions};
use sluice_redis::{ConnectSettings, Connection, Keyspace};

/// Reconnect attempts before a command fails (as the functions have: 2).
/// With six, the `redis` crate's own, a command waited up to 6 s for a
/// Redis that was down (issue 18: a restarted Redis held ingest's requests
/// for the whole outage, where a 503 was due).
const RECONNECT_RETRIES: usize = 1;

/// A Redis to talk to, and the private server behind it if we started one.
#[derive(Debug)]
pub(crate) struct RedisTarget {
    settings: ConnectSettings,
    /// The URL, for other commands to reach the same Redis.
    pub(crate) url: String,
    pub(crate) description: String,
    /// Kept alive for the run; dropping it stops the servers.
    _private: Option<PrivateRedis>,
}

impl RedisTarget {
    /// `SLUICE_REDIS_URL`, or a private server: it keeps nothing, or with
    /// `data_dir` keeps its data there (append-only file) across runs.
    pub(crate) fn from_env_or_private(data_dir: Option<std::path::PathBuf>) -> anyhow::Result<Self> {
        let kept = data_dir.as_ref().map(|d| format!(", data in {}", d.display())).unwrap_or_default();
        Self::from_env_or(|| {
            let private = PrivateRedis::plain(ServerOptions { data_dir, ..ServerOptions::default() })?;
            let description = format!("private redis-server on 127.0.0.1:{}{kept}", private.port(0));
            Ok((private, description))
        })
    }

    /// `SLUICE_REDIS_URL`, or a private deployment of `kind` that keeps
    /// nothing: a TLS-only cluster is what the functions meet in AWS.
    pub(crate) fn from_env_or_deployment(kind: DeploymentKind) -> anyhow::Result<Self> {
        Self::from_env_or(|| {
            let private = PrivateRedis::start(kind)?;
            let ports: Vec<String> = (0..private.nodes()).map(|i| private.port(i).to_string()).collect();
            let description = match kind {
                DeploymentKind::Plain => format!("private redis-server on 127.0.0.1:{}", ports[0]),
                DeploymentKind::Tls => {
                    format!("private TLS-only redis-server (ACL user {PRIVATE_USER}) on 127.0.0.1:{}", ports[0])
                }
                DeploymentKind::Cluster => format!(
                    "private cluster of {} TLS-only masters (ACL user {PRIVATE_USER}), as ElastiCache Serverless is, on 127.0.0.1:{}",
                    ports.len(),
                    ports.join(",")
                ),
            };
            Ok((private, description))
        })
    }

    /// The Redis `SLUICE_REDIS_URL` names, else the one `private` starts.
    fn from_env_or(private: impl FnOnce() -> Result<(PrivateRedis, String), ServerError>) -> anyhow::Result<Self> {
        // The Redis `SLUICE_REDIS_URL` names, if set (checked as the functions check it).
        if let Some(common) = sluice_config::Common::read_optional(&sluice_config::EnvSource::from_process())? {
            let url = common.redis_url.expose().to_owned();
            let endpoint = common.redis_settings().endpoint().unwrap_or_default();
            let description = format!("Redis at {endpoint} (SLUICE_REDIS_URL)");
            return Ok(Self { settings: common.redis_settings(), url, description, _private: None });
        }
        let (server, description) = private().map_err(|e| match e {
            ServerError::NotInstalled => anyhow!("{e}, or set SLUICE_REDIS_URL to use a running Redis"),
            e => e.into(),
        })?;
        // The URL carries the password: it is how the functions (process
        // mode) are told of a private deployment, never printed.
        // The timeouts of any other Redis, not the generous ones of tests.
        let usual = ConnectSettings::new(server.url());
        let settings = ConnectSettings {
            connect_timeout: usual.connect_timeout,
            response_timeout: usual.response_timeout,
            ..server.settings()
        };
        Ok(Self { settings, url: server.url_with_password(), description, _private: Some(server) })
    }

    /// The private CA its certificate is checked against, if one is set.
    pub(crate) fn ca_file(&self) -> Option<std::path::PathBuf> {
        self.settings.ca_file.clone()
    }

    /// A connection to it. A command gives up on an unreachable Redis
    /// after [`RECONNECT_RETRIES`] attempts, so ingest answers 503 at once
    /// while Redis is away instead of holding the sender for the outage.
    pub(crate) async fn connect(&self) -> anyhow::Result<Connection> {
        let settings = ConnectSettings { reconnect_retries: RECONNECT_RETRIES, ..self.settings.clone() };
        sluice_redis::connect(&settings).await.with_context(|| format!("cannot connect to {}", self.description))
    }
}

/// The Redis and key prefix of the state an inspecting command reads.
#[derive(Debug)]
pub(crate) struct StateRedis {
    settings: ConnectSettings,
    pub(crate) keyspace: Keyspace,
}

impl StateRedis {
    /// `SLUICE_REDIS_URL` (with `SLUICE_KEY_PREFIX`, default `sluice:`), or
    /// the Redis of the `sluice dev` running in this directory. With no Redis
    /// named the command cannot run: a usage error of `who`.
    pub(crate) fn locate(who: &'static str) -> anyhow::Result<Self> {
        let named = sluice_config::Common::read_optional(&sluice_config::EnvSource::from_process())
            .map_err(|e| usage(who, e))?;
        let (settings, prefix) = match named {
            Some(common) => (common.redis_settings(), common.keyspace.prefix().to_owned()),
            None => match DevState::read(&DevState::path()) {
                Some(state) => {
                    let settings =
                        ConnectSettings { ca_file: state.redis_ca_file, ..ConnectSettings::new(state.redis_url) };
                    (settings, state.key_prefix)
                }
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
        let keyspace = Keyspace::new(prefix).map_err(|e| usage(who, e))?;
        Ok(Self { settings, keyspace })
    }

    pub(crate) async fn connection(&self) -> anyhow::Result<Connection> {
        sluice_redis::connect(&self.settings).await.map_err(|e| {
            anyhow!("cannot reach Redis ({e}); if {DEV_STATE_FILE} is left from a `sluice dev` that was killed, start it again")
        })
    }
}
