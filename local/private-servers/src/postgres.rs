//! A private PostgreSQL: `initdb` into a directory and `postgres` on a
//! free port of 127.0.0.1. The demo (`sluice demo shops`) starts one when
//! no database URL is given, as it starts a private redis-server, and the
//! tests start one per test binary (`sluice-testkit`).
//!
//! PostgreSQL refuses to run as root, so under root both run as the
//! `postgres` user (`setpriv`), which owns the directory. Durability is off
//! (`fsync`, `synchronous_commit`, `full_page_writes`): these databases
//! need not survive a machine crash; a restart (a clean shutdown) keeps
//! everything.
//!
//! As with the private Redis, `postgres` runs under a small `sh` watchdog
//! holding a pipe from us: when our process ends in any way the pipe closes
//! and the watchdog stops the server, so none outlives its owner.

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long a server may take to accept connections.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs `"$@"` (postgres) and stops it with SIGINT (PostgreSQL's fast
/// shutdown) when our end of its stdin closes.
const WATCHDOG: &str = r#"exec 3<&0
"$@" <&- >/dev/null 2>&1 &
server=$!
stop() { kill -INT "$server" 2>/dev/null; wait "$server"; }
trap stop EXIT
trap 'exit 0' TERM INT
read -r _ <&3
"#;

/// Why a private PostgreSQL could not start.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ServerError(String);

fn failed(what: &str, e: impl fmt::Display) -> ServerError {
    ServerError(format!("private postgresql: {what}: {e}"))
}

/// A running private PostgreSQL.
#[derive(Debug)]
pub struct PostgresServer {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    running: Option<(Child, ChildStdin)>,
}

impl PostgresServer {
    /// initdb and start. The error says in one line what is missing.
    pub async fn start() -> Result<Self, ServerError> {
        static STARTS: AtomicUsize = AtomicUsize::new(0);
        let bin = bin_dir().ok_or_else(|| {
            ServerError("PostgreSQL is missing: install it with `apt-get install -y postgresql`".into())
        })?;
        let port = crate::redis_server::free_port().map_err(|e| failed("no free port", e))?;
        let name = format!("sluice-pg-{}-{}-{port}", std::process::id(), STARTS.fetch_add(1, Ordering::Relaxed));
        let dir = std::env::temp_dir().join(name);
        std::fs::create_dir_all(&dir).map_err(|e| failed(&format!("cannot create {}", dir.display()), e))?;
        let data = dir.join("data");
        let mut initdb = as_postgres(&dir, &bin.join("initdb"))?;
        initdb.arg("-D").arg(&data).args(["-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"]);
        let out = initdb.stdout(Stdio::null()).output().map_err(|e| failed("cannot run initdb", e))?;
        if !out.status.success() {
            return Err(failed("initdb failed", String::from_utf8_lossy(&out.stderr).trim()));
        }
        let mut server = Self { bin, dir, port, running: None };
        server.start_again().await?;
        Ok(server)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `postgres://postgres@127.0.0.1:<port>/<database>`.
    pub fn url(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", self.port)
    }

    /// Stops the server (a fast shutdown: open connections are cut).
    pub fn stop(&mut self) {
        if let Some((mut child, lifeline)) = self.running.take() {
            drop(lifeline);
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port and data, after [`stop`](Self::stop).
    pub async fn start_again(&mut self) -> Result<(), ServerError> {
        let mut command = Command::new("sh");
        command.args(["-c", WATCHDOG, "sluice-postgres-watchdog"]);
        // Its own process group: a terminal's Ctrl-C reaches only us, and
        // the server serves until our graceful stop is done.
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let postgres = as_postgres(&self.dir, &self.bin.join("postgres"))?;
        command.arg(postgres.get_program()).args(postgres.get_args());
        command.arg("-D").arg(self.dir.join("data")).args(["-p", &self.port.to_string()]);
        command.arg("-k").arg(&self.dir);
        for setting in [
            "listen_addresses=127.0.0.1",
            "fsync=off",
            "synchronous_commit=off",
            "full_page_writes=off",
            "max_connections=200",
        ] {
            command.args(["-c", setting]);
        }
        let mut child = command.stdin(Stdio::piped()).spawn().map_err(|e| failed("cannot start postgres", e))?;
        let lifeline = child.stdin.take().ok_or_else(|| failed("postgres watchdog", "no stdin"))?;
        self.running = Some((child, lifeline));
        let deadline = Instant::now() + START_TIMEOUT;
        let options =
            PgConnectOptions::new().host("127.0.0.1").port(self.port).username("postgres").database("postgres");
        loop {
            match sqlx::ConnectOptions::connect(&options).await {
                Ok(conn) => {
                    let _ = sqlx::Connection::close(conn).await;
                    return Ok(());
                }
                Err(e) if Instant::now() >= deadline => {
                    return Err(failed(&format!("not ready on port {} after {START_TIMEOUT:?}", self.port), e));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }

    /// A new, empty database for `name`, and a pool on it.
    pub async fn database(&self, name: &str) -> Result<(String, PgPool), ServerError> {
        static DATABASES: AtomicUsize = AtomicUsize::new(0);
        let stem: String = name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' })
            .take(40)
            .collect();
        let name = format!("t{}_{stem}", DATABASES.fetch_add(1, Ordering::Relaxed));
        let admin = PgPoolOptions::new()
            .max_connections(1)
            .connect(&self.url("postgres"))
            .await
            .map_err(|e| failed("connect", e))?;
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
            .execute(&admin)
            .await
            .map_err(|e| failed("create database", e))?;
        admin.close().await;
        let url = self.url(&name);
        // A stopped server fails an acquire after this, not after sqlx's 30 s default.
        let pool = PgPoolOptions::new()
            .max_connections(10)
            // As the drain's own pool (`sluice_sink::database::connect_with`).
            .test_before_acquire(false)
            .acquire_timeout(Duration::from_secs(2))
            .connect(&url)
            .await
            .map_err(|e| failed("connect", e))?;
        Ok((url, pool))
    }
}

impl Drop for PostgresServer {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `program` run as the `postgres` user when we are root (PostgreSQL
/// refuses root), which then owns `dir`.
fn as_postgres(dir: &Path, program: &Path) -> Result<Command, ServerError> {
    let root = Command::new("id").arg("-u").output().map(|o| o.stdout.starts_with(b"0\n")).unwrap_or(false);
    if !root {
        return Ok(Command::new(program));
    }
    let status = Command::new("chown").arg("-R").arg("postgres:postgres").arg(dir).status();
    if !status.is_ok_and(|s| s.success()) {
        return Err(failed(&format!("cannot give {} to the postgres user", dir.display()), "chown failed"));
    }
    let mut command = Command::new("setpriv");
    command.args(["--reuid=postgres", "--regid=postgres", "--init-groups"]).arg(program);
    Ok(command)
}

/// The newest installed PostgreSQL's binaries.
fn bin_dir() -> Option<PathBuf> {
    let newest = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|e| Some((e.file_name().to_str()?.parse::<u32>().ok()?, e.path().join("bin"))))
        .filter(|(_, bin)| bin.join("postgres").exists())
        .max();
    newest.map(|(_, bin)| bin).or_else(|| {
        let out = Command::new("pg_config").arg("--bindir").output().ok()?;
        let bin = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
        bin.join("postgres").exists().then_some(bin)
    })
}
