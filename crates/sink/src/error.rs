//! The sink's errors.

/// What stopped a drain pass. Either way, nothing was acknowledged that
/// was not committed: the entries stay pending and are retried.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    /// The database URL cannot be used (the URL itself is not shown: it
    /// holds a password).
    #[error("the database URL is invalid: {0}")]
    Url(String),
    /// The first connection failed.
    #[error("cannot connect to postgresql at {endpoint}: {}", connect_cause(.source))]
    Connect { endpoint: String, source: sqlx::Error },
    /// PostgreSQL refused or could not be reached.
    #[error("postgresql: {0}")]
    Database(#[from] sqlx::Error),
    /// Applying the migrations failed.
    #[error("migrating the sluice schema: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// Redis refused or could not be reached.
    #[error("{0}")]
    Redis(#[from] sluice_redis::Error),
}

/// Why a connection failed. sqlx's pool retries an unreachable server
/// until its timeout and then says only that it timed out: say what that
/// means instead.
fn connect_cause(e: &sqlx::Error) -> String {
    match e {
        sqlx::Error::PoolTimedOut => format!(
            "no connection within {} s (nothing listens there, or a firewall or security group drops the packets)",
            crate::database::CONNECT_TIMEOUT.as_secs()
        ),
        other => other.to_string(),
    }
}
