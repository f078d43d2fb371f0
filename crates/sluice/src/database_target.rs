//! Which PostgreSQL a command uses.
//!
//! - `sluice dev` drains into `--database-url` / `SLUICE_DATABASE_URL`, else
//!   into the database `sluice` of the local PostgreSQL (127.0.0.1:5432, or
//!   where `PGHOST` and `PGPORT` say, as for `psql`) when one answers there
//!   as user `postgres` (a fresh `apt-get install postgresql` with trust or
//!   peer-free local auth), creating the database if missing
//!   ([`local_default`]); else the drain is off.
//! - `sluice trace` reads `SLUICE_DATABASE_URL` when set, else the database
//!   `sluice dev` drains into by default, if it is there (it creates
//!   nothing: [`local_existing`]); without either it says why in one line
//!   and never fails for want of one ([`for_operator`]).
//! - `sluice demo shops` drains into a private PostgreSQL of its own when
//!   `initdb` is installed ([`private`]), so it never writes into a user's
//!   database, else into the URL given.
//!
//! A URL may hold a password: only its endpoint (`host:port/database`) is
//! ever printed.

use sluice_config::{EnvSource, SecretSetting, database_url};
use sluice_private_servers::PostgresServer;
use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, Connection, PgConnection, PgPool};
use std::str::FromStr;
use std::time::Duration;

/// Where `sluice dev` looks for a PostgreSQL when no URL is given (and
/// neither `PGHOST` nor `PGPORT` is set).
pub(crate) const LOCAL_HOST: &str = "127.0.0.1";
pub(crate) const LOCAL_PORT: u16 = 5432;
/// The database `sluice dev` drains into there (created when missing).
pub(crate) const LOCAL_DATABASE: &str = "sluice";
/// How long the probe of the local PostgreSQL may take: it answers at once
/// on loopback, or is not there.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// A database to use, or why there is none. None is not an error: the
/// command goes on without one (the drain off, PostgreSQL not searched)
/// and prints why.
#[derive(Debug)]
pub(crate) enum DatabaseTarget {
    Found(DrainDatabase),
    Absent(NoDatabase),
}

/// Why there is no database to use, in a few words.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct NoDatabase(String);

impl DatabaseTarget {
    pub(crate) fn found(&self) -> Option<&DrainDatabase> {
        if let Self::Found(database) = self { Some(database) } else { None }
    }
}

impl From<Result<DrainDatabase, NoDatabase>> for DatabaseTarget {
    fn from(found: Result<DrainDatabase, NoDatabase>) -> Self {
        found.map_or_else(Self::Absent, Self::Found)
    }
}

/// The configured database, else `sluice dev`'s default one if it is
/// there. A configured one that cannot be reached is an error naming it.
pub(crate) async fn for_operator(who: &'static str) -> anyhow::Result<DatabaseTarget> {
    match configured_url(who, None)? {
        Some(url) => Ok(DatabaseTarget::Found(DrainDatabase::connect(&url).await?)),
        None => Ok(local_existing().await.into()),
    }
}

/// `flag`, else `SLUICE_DATABASE_URL`. The secret's ARN is refused: only
/// the drain function reads Secrets Manager.
pub(crate) fn configured_url(who: &'static str, flag: Option<String>) -> anyhow::Result<Option<String>> {
    let env = EnvSource::from_process().with("database_url", flag);
    match database_url(&env).map_err(|e| crate::usage(who, e))? {
        Some(SecretSetting::Value(url)) => Ok(Some(url.expose().to_owned())),
        Some(SecretSetting::Arn(_)) => Err(crate::usage(
            who,
            "SLUICE_DATABASE_URL_SECRET_ARN is read by the drain function; give the URL itself here \
             (--database-url or SLUICE_DATABASE_URL)",
        )),
        None => Ok(None),
    }
}

/// An open database to drain into.
#[derive(Debug)]
pub(crate) struct DrainDatabase {
    pub(crate) pool: PgPool,
    /// `host:port/database`, never the URL.
    pub(crate) endpoint: String,
    /// Kept alive for the run; dropping it stops the server.
    _private: Option<PostgresServer>,
}

impl DrainDatabase {
    /// Connects to `url`: a malformed URL is a usage error (exit 2), an
    /// unreachable database an error naming its endpoint.
    pub(crate) async fn open(who: &'static str, url: &str) -> anyhow::Result<Self> {
        Self::connect(url).await.map_err(|e| match e {
            sluice_sink::SinkError::Url(_) => crate::usage(who, e),
            other => other.into(),
        })
    }

    async fn connect(url: &str) -> Result<Self, sluice_sink::SinkError> {
        let pool = sluice_sink::connect(url).await?;
        let endpoint = PgConnectOptions::from_str(url).map(|o| sluice_sink::database::endpoint(&o)).unwrap_or_default();
        Ok(Self { pool, endpoint, _private: None })
    }
}

/// Where `sluice dev` drains: `--database-url` / `SLUICE_DATABASE_URL`
/// (which must work), else the local default; absent, the drain is off.
pub(crate) async fn for_dev(flag: Option<String>, no_drain: bool) -> anyhow::Result<DatabaseTarget> {
    if no_drain {
        return Ok(DatabaseTarget::Absent(NoDatabase("--no-drain".into())));
    }
    match configured_url("sluice dev", flag)? {
        Some(url) => Ok(DatabaseTarget::Found(DrainDatabase::open("sluice dev", &url).await?)),
        None => Ok(local_default().await.into()),
    }
}

/// The local PostgreSQL's host and port: `PGHOST` (a host name; a socket
/// directory is not followed) and `PGPORT` when set, else 127.0.0.1:5432.
fn local_server() -> (String, u16) {
    let host = std::env::var("PGHOST").ok().filter(|h| !h.is_empty() && !h.starts_with('/'));
    let port = std::env::var("PGPORT").ok().and_then(|p| p.parse().ok());
    (host.unwrap_or_else(|| LOCAL_HOST.to_owned()), port.unwrap_or(LOCAL_PORT))
}

/// `database` of the local PostgreSQL as user `postgres`, connected
/// within [`PROBE_TIMEOUT`]; or why not, in a few words.
async fn probe(database: &str) -> Result<(PgConnection, PgConnectOptions, String), NoDatabase> {
    let (host, port) = local_server();
    let options = PgConnectOptions::new().host(&host).port(port).username("postgres").database(database);
    let where_ = format!("{host}:{port}");
    match tokio::time::timeout(PROBE_TIMEOUT, options.connect()).await {
        Ok(Ok(conn)) => Ok((conn, options, where_)),
        Ok(Err(sqlx::Error::Io(_))) | Err(_) => Err(NoDatabase(format!("no PostgreSQL answers at {where_}"))),
        Ok(Err(sqlx::Error::Database(e))) if e.code().as_deref() == Some("3D000") => {
            Err(NoDatabase(format!("the PostgreSQL at {where_} has no database {database}")))
        }
        Ok(Err(_)) => Err(NoDatabase(format!("the PostgreSQL at {where_} refused user postgres without a password"))),
    }
}

/// The database [`LOCAL_DATABASE`] of the local PostgreSQL ([`local_server`]),
/// as user `postgres`, created when missing; or why there is none, in a
/// few words.
async fn local_default() -> Result<DrainDatabase, NoDatabase> {
    let (mut admin, server, where_) = probe("postgres").await?;
    let exists: Option<i32> = sqlx::query_scalar("SELECT 1 FROM pg_database WHERE datname = $1")
        .bind(LOCAL_DATABASE)
        .fetch_optional(&mut admin)
        .await
        .map_err(|e| NoDatabase(format!("the PostgreSQL at {where_}: {e}")))?;
    if exists.is_none() {
        let create = sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {LOCAL_DATABASE}")));
        match create.execute(&mut admin).await {
            Ok(_) => {}
            // Another sluice created it meanwhile.
            Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("42P04") => {}
            Err(e) => return Err(NoDatabase(format!("cannot create database {LOCAL_DATABASE} at {where_}: {e}"))),
        }
    }
    let _ = admin.close().await;
    open_local(server.database(LOCAL_DATABASE), where_).await
}

/// The database [`LOCAL_DATABASE`] of the local PostgreSQL if it is there:
/// what `sluice dev` drains into by default. Nothing is created.
async fn local_existing() -> Result<DrainDatabase, NoDatabase> {
    let (conn, options, where_) = probe(LOCAL_DATABASE).await?;
    let _ = conn.close().await;
    open_local(options, where_).await
}

async fn open_local(options: PgConnectOptions, where_: String) -> Result<DrainDatabase, NoDatabase> {
    let pool = sluice_sink::database::connect_with(options).await.map_err(|e| NoDatabase(e.to_string()))?;
    Ok(DrainDatabase { pool, endpoint: format!("{where_}/{LOCAL_DATABASE}"), _private: None })
}

/// A private PostgreSQL started for this run (initdb into a temporary
/// directory), stopped when the returned value is dropped; or why not, in
/// one line.
pub(crate) async fn private() -> Result<DrainDatabase, NoDatabase> {
    let server = PostgresServer::start().await.map_err(|e| NoDatabase(e.to_string()))?;
    let pool = sluice_sink::connect(&server.url("postgres"))
        .await
        .map_err(|e| NoDatabase(format!("private postgresql: {e}")))?;
    let endpoint = format!("{LOCAL_HOST}:{}/postgres (private, for this run only)", server.port());
    Ok(DrainDatabase { pool, endpoint, _private: Some(server) })
}
