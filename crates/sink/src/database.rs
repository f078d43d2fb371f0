//! Connecting to the user's PostgreSQL. The URL holds a password, so an
//! error names the endpoint (`host:port/database`) and never the URL.

use crate::error::SinkError;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use std::str::FromStr;
use std::time::Duration;

/// How long a connection attempt may take before the pass fails (and is
/// retried): longer than a healthy database ever needs, short enough that a
/// down one is reported within the drain function's run.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Connections per process: a few drain consumers and `sluice status`.
pub const MAX_CONNECTIONS: u32 = 4;

/// A pool on `url`, with one connection made now so a wrong URL, password
/// or host is reported at start.
pub async fn connect(url: &str) -> Result<PgPool, SinkError> {
    let options = PgConnectOptions::from_str(url).map_err(|e| SinkError::Url(first_line(&e)))?;
    connect_with(options).await
}

/// [`connect`] with the options already built.
pub async fn connect_with(options: PgConnectOptions) -> Result<PgPool, SinkError> {
    let endpoint = endpoint(&options);
    PgPoolOptions::new()
        .max_connections(MAX_CONNECTIONS)
        .acquire_timeout(CONNECT_TIMEOUT)
        // sqlx pings a connection when it goes back to the pool, and closes
        // it if that fails; pinging it again when it is taken cost the
        // drain a round trip per batch (3% of its rows/s here). A
        // connection that died while idle (the database restarted) fails
        // the one batch that takes it, which is retried as any failure is.
        .test_before_acquire(false)
        .connect_with(options)
        .await
        .map_err(|source| SinkError::Connect { endpoint, source })
}

/// `host:port/database` of `options`: what errors and banners show.
pub fn endpoint(options: &PgConnectOptions) -> String {
    format!("{}:{}/{}", options.get_host(), options.get_port(), options.get_database().unwrap_or("postgres"))
}

/// sqlx's URL errors can quote the URL; keep the kind of problem only.
fn first_line(e: &sqlx::Error) -> String {
    match e {
        sqlx::Error::Configuration(_) => "not a PostgreSQL URL (postgres://user:password@host:port/database)".into(),
        other => other.to_string().lines().next().unwrap_or_default().to_owned(),
    }
}
