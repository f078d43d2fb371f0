//! [`connect`]: the one way every deployable (the step functions, ingest,
//! `sluice dev`, the CLI) reaches Redis, the same code for
//!
//! - a plain `redis://host:port` server (Valkey, a local `redis-server`);
//! - TLS, `rediss://user@host:port`: the server's certificate is checked
//!   against the webpki roots (Amazon's CAs among them, so ElastiCache
//!   needs nothing more) or, with [`ConnectSettings::ca_file`], against a
//!   private CA only; the ACL user comes from the URL, the password from
//!   the URL or [`ConnectSettings::password`] (read from Secrets Manager);
//! - cluster mode (ElastiCache Serverless, a self-hosted cluster): the
//!   `redis` crate's cluster client, which follows MOVED and ASK.
//!
//! Which of standalone or cluster is [`ClusterMode`]: `auto` (the default)
//! asks the server `CLUSTER INFO` once, on a connection of its own, and
//! then opens the right kind; `on` and `off` skip the question.
//!
//! A failure is a [`ConnectError`] naming the endpoint (never the
//! password) and what went wrong: unreachable, TLS refused, credentials
//! refused.

use crate::connection::Connection;
use redis::aio::{ConnectionManagerConfig, MultiplexedConnection};
use redis::cluster::ClusterClient;
use redis::{AsyncConnectionConfig, Client, ConnectionAddr, ConnectionInfo, IntoConnectionInfo, RedisError};
use redis::{ErrorKind, TlsCertificates};
use std::path::PathBuf;
use std::time::Duration;

/// The longest pause between two reconnect attempts to a standalone
/// server. A command waits for the reconnect in progress, so a backoff
/// left to grow (to 3.2 s by the sixth attempt) keeps the first commands
/// after a restarted server is back waiting seconds for an attempt that
/// would now succeed.
pub const MAX_RECONNECT_DELAY: Duration = Duration::from_millis(250);

/// The fewest retries a cluster connection gets, whatever
/// [`ConnectSettings::reconnect_retries`] says. The cluster client spends a
/// retry on every redirect, not only on reconnects: after a failover, a
/// command first fails on the lost master, then meets MOVED at the node it
/// tries next; with one retry that MOVED reached the caller (a 503 from
/// ingest, a failed step) though the promoted replica was serving. The
/// wait stays bounded: the answer timeout covers a command's retries too.
pub const CLUSTER_MIN_RETRIES: usize = 3;

/// The least and most milliseconds a cluster connection waits before it
/// retries a command the cluster asked to retry (CLUSTERDOWN, TRYAGAIN):
/// all of [`CLUSTER_MIN_RETRIES`] fit well inside an answer timeout.
pub const CLUSTER_RETRY_WAIT: (u64, u64) = (10, 100);

/// Standalone or cluster.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ClusterMode {
    /// Ask the server (`CLUSTER INFO`) once at connect.
    #[default]
    Auto,
    /// A cluster: the endpoint is one of its nodes (or ElastiCache
    /// Serverless's one endpoint).
    On,
    /// One server, no cluster.
    Off,
}

impl std::str::FromStr for ClusterMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(Self::Auto),
            "on" | "yes" | "true" | "1" => Ok(Self::On),
            "off" | "no" | "false" | "0" => Ok(Self::Off),
            _ => Err(format!("expected auto, on or off, not {s:?}")),
        }
    }
}

/// What [`connect`] needs.
#[derive(Clone)]
pub struct ConnectSettings {
    /// `redis://[user@]host:port` or `rediss://…`; may carry a password.
    pub url: String,
    /// A password that replaces the URL's (e.g. read from Secrets Manager).
    pub password: Option<String>,
    /// A PEM file of the CA(s) that sign the server's certificate, trusted
    /// instead of the webpki roots; only with a `rediss://` URL.
    pub ca_file: Option<PathBuf>,
    pub cluster: ClusterMode,
    /// How long opening a connection may take.
    pub connect_timeout: Duration,
    /// How long one command may wait for its answer.
    pub response_timeout: Duration,
    /// Reconnect attempts before a command fails: how long a command waits
    /// for an unreachable server (attempts at most [`MAX_RECONNECT_DELAY`]
    /// apart). The next command starts a new round, so a connection never
    /// stays broken once the server is back.
    pub reconnect_retries: usize,
}

impl ConnectSettings {
    /// `url` with the `redis` crate's own timeouts (1 s to connect, 500 ms
    /// an answer, 6 reconnect attempts), no CA file, cluster mode asked.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            password: None,
            ca_file: None,
            cluster: ClusterMode::Auto,
            connect_timeout: Duration::from_secs(1),
            response_timeout: Duration::from_millis(500),
            reconnect_retries: 6,
        }
    }

    /// Where the settings point, for messages: scheme, user, host and
    /// port, never a password. `None` for a URL that does not parse.
    pub fn endpoint(&self) -> Option<String> {
        self.url.as_str().into_connection_info().ok().map(|info| endpoint(&info))
    }
}

impl std::fmt::Debug for ConnectSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectSettings")
            .field("endpoint", &self.endpoint())
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("ca_file", &self.ca_file)
            .field("cluster", &self.cluster)
            .field("connect_timeout", &self.connect_timeout)
            .field("response_timeout", &self.response_timeout)
            .field("reconnect_retries", &self.reconnect_retries)
            .finish()
    }
}

/// What went wrong when connecting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// No connection: nothing listens there, a firewall, DNS, a timeout.
    Unreachable,
    /// The TLS handshake failed: the certificate is not signed by a trusted
    /// CA or names another host, or the server does not speak TLS.
    Tls,
    /// The server refused the user or password.
    Credentials,
    /// Anything else the server answered.
    Other,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Unreachable => "unreachable",
            Self::Tls => "the TLS handshake failed",
            Self::Credentials => "the user or password was refused",
            Self::Other => "the server refused the connection",
        })
    }
}

/// Why [`connect`] failed. No variant shows the URL's password.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The URL does not parse (the parser's message never quotes it).
    #[error("not a Redis URL (expected redis://host:port or rediss://user@host:port): {0}")]
    Url(RedisError),
    /// A CA file was given for a URL that is not `rediss://`.
    #[error("a CA file is set but {endpoint} does not use TLS (rediss://)")]
    CaWithoutTls { endpoint: String },
    #[error("cannot read the CA file {path}: {source}")]
    CaFile { path: PathBuf, source: std::io::Error },
    #[error("Redis at {endpoint}: {refusal}: {source}")]
    Refused { endpoint: String, refusal: Refusal, source: RedisError },
    /// `auto` could not tell standalone from cluster.
    #[error(
        "Redis at {endpoint}: cannot tell whether it runs in cluster mode (CLUSTER INFO: {source}); set the cluster mode to on or off"
    )]
    ClusterProbe { endpoint: String, source: RedisError },
}

/// Connects as `settings` say: see the module docs.
pub async fn connect(settings: &ConnectSettings) -> Result<Connection, ConnectError> {
    install_ring();
    let mut info = settings.url.as_str().into_connection_info().map_err(ConnectError::Url)?;
    if let Some(password) = &settings.password {
        let redis = info.redis_settings().clone().set_password(password);
        info = info.set_redis_settings(redis);
    }
    let endpoint = endpoint(&info);
    let certificates = certificates(settings, &info, &endpoint)?;
    let client = match &certificates {
        Some(certs) => Client::build_with_tls(info.clone(), certs.clone()),
        None => Client::open(info.clone()),
    }
    .map_err(ConnectError::Url)?;
    let refused = |source| ConnectError::Refused { refusal: classify(&source), endpoint: endpoint.clone(), source };
    let cluster = match settings.cluster {
        ClusterMode::On => true,
        ClusterMode::Off => false,
        ClusterMode::Auto => {
            let config = AsyncConnectionConfig::new()
                .set_connection_timeout(Some(settings.connect_timeout))
                .set_response_timeout(Some(settings.response_timeout));
            let probe = client.get_multiplexed_async_connection_with_config(&config).await.map_err(refused)?;
            is_cluster(probe).await.map_err(|source| match classify(&source) {
                // Without a password the connection opens; its first command is refused.
                Refusal::Credentials => refused(source),
                _ => ConnectError::ClusterProbe { endpoint: endpoint.clone(), source },
            })?
        }
    };
    let mut conn = if cluster {
        let mut builder = ClusterClient::builder([info])
            .connection_timeout(settings.connect_timeout)
            .response_timeout(settings.response_timeout)
            .retries(u32::try_from(settings.reconnect_retries.max(CLUSTER_MIN_RETRIES)).unwrap_or(u32::MAX))
            // The crate waits at least 1.28 s before retrying a CLUSTERDOWN
            // or TRYAGAIN: longer than the answer timeout, so while a failed
            // master was being replaced every command ran out its whole
            // timeout instead of failing with what the cluster said.
            .min_retry_wait(CLUSTER_RETRY_WAIT.0)
            .max_retry_wait(CLUSTER_RETRY_WAIT.1);
        if let Some(certs) = certificates {
            builder = builder.certs(certs);
        }
        let client = builder.build().map_err(ConnectError::Url)?;
        Connection::Cluster(client.get_async_connection().await.map_err(refused)?)
    } else {
        let config = ConnectionManagerConfig::new()
            .set_number_of_retries(settings.reconnect_retries)
            .set_max_delay(MAX_RECONNECT_DELAY)
            .set_connection_timeout(Some(settings.connect_timeout))
            .set_response_timeout(Some(settings.response_timeout));
        Connection::Standalone(client.get_connection_manager_with_config(config).await.map_err(refused)?)
    };
    // A connection without a password opens and answers its first command
    // with NOAUTH: ask once, so that is a refusal here, not a failed step.
    redis::cmd("PING").exec_async(&mut conn).await.map_err(refused)?;
    Ok(conn)
}

/// Makes ring the process's rustls provider, once. The redis crate builds
/// its TLS config with the process default, which rustls picks by itself
/// only when a build has exactly one provider compiled in; a test binary
/// of this crate alone has none unless we choose. A provider a binary
/// installed before is kept.
fn install_ring() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _already_installed = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The private CA to trust, read from its file, if one is set.
fn certificates(
    settings: &ConnectSettings,
    info: &ConnectionInfo,
    endpoint: &str,
) -> Result<Option<TlsCertificates>, ConnectError> {
    let Some(path) = &settings.ca_file else { return Ok(None) };
    if !matches!(info.addr(), ConnectionAddr::TcpTls { .. }) {
        return Err(ConnectError::CaWithoutTls { endpoint: endpoint.to_owned() });
    }
    let pem = std::fs::read(path).map_err(|source| ConnectError::CaFile { path: path.clone(), source })?;
    Ok(Some(TlsCertificates { client_tls: None, root_cert: Some(pem) }))
}

/// Whether the server behind `probe` runs in cluster mode. A server
/// without it answers `CLUSTER INFO` with an error saying so.
async fn is_cluster(mut probe: MultiplexedConnection) -> Result<bool, RedisError> {
    match redis::cmd("CLUSTER").arg("INFO").query_async::<String>(&mut probe).await {
        Ok(info) => Ok(!info.contains("cluster_enabled:0")),
        Err(e) if e.to_string().contains("cluster support disabled") => Ok(false),
        Err(e) => Err(e),
    }
}

/// `scheme://[user@]host:port`: enough to find the server, nothing secret.
fn endpoint(info: &ConnectionInfo) -> String {
    let user = info.redis_settings().username().map(|u| format!("{u}@")).unwrap_or_default();
    match info.addr() {
        ConnectionAddr::TcpTls { .. } => format!("rediss://{user}{}", info.addr()),
        ConnectionAddr::Unix(path) => format!("unix://{}", path.display()),
        addr => format!("redis://{user}{addr}"),
    }
}

/// What kind of failure `e` is. The TLS errors come from rustls wrapped in
/// an I/O error, so they are told apart by their message.
fn classify(e: &RedisError) -> Refusal {
    let text = e.to_string().to_ascii_lowercase();
    let tls = ["certificate", "tls", "handshake", "peer sent", "invalid peer"];
    if e.kind() == ErrorKind::AuthenticationFailed
        || ["wrongpass", "noauth", "noperm", "invalid username-password", "authentication failed"]
            .iter()
            .any(|w| text.contains(w))
    {
        Refusal::Credentials
    } else if tls.iter().any(|w| text.contains(w)) {
        Refusal::Tls
    } else if e.is_io_error() || e.is_timeout() || e.is_connection_refusal() || e.is_connection_dropped() {
        Refusal::Unreachable
    } else {
        Refusal::Other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_modes_parse_and_bad_ones_are_named() {
        assert_eq!("auto".parse(), Ok(ClusterMode::Auto));
        assert_eq!(" ON ".parse(), Ok(ClusterMode::On));
        assert_eq!("off".parse(), Ok(ClusterMode::Off));
        assert_eq!("sometimes".parse::<ClusterMode>(), Err("expected auto, on or off, not \"sometimes\"".to_owned()));
    }

    #[test]
    fn the_endpoint_never_shows_the_password() {
        let mut settings = ConnectSettings::new("rediss://app:hunter2@cache.example:6379");
        settings.password = Some("hunter3".into());
        assert_eq!(settings.endpoint().as_deref(), Some("rediss://app@cache.example:6379"));
        assert_eq!(
            ConnectSettings::new("redis://127.0.0.1:7000/").endpoint().as_deref(),
            Some("redis://127.0.0.1:7000")
        );
        let shown = format!("{settings:?}");
        assert!(!shown.contains("hunter"), "{shown}");
    }
}
