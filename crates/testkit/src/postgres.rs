//! A private PostgreSQL for tests: `initdb` into a temporary directory and
//! `postgres` on a free port of 127.0.0.1, started once per test binary
//! ([`TestPostgres::new`], a database per test) or on its own
//! ([`PostgresServer::start`], for a test that stops and restarts it).
//!
//! PostgreSQL refuses to run as root, so under root both run as the
//! `postgres` user (`setpriv`), which owns the directory. Durability is off
//! (`fsync`, `synchronous_commit`, `full_page_writes`): a test's database
//! need not survive a machine crash, and tests run faster without it; a
//! restart (a clean shutdown) keeps everything.
//!
//! As with the Redis server, `postgres` runs under a small `sh` watchdog
//! holding a pipe from us: when the test process ends in any way the pipe
//! closes and the watchdog stops the server, so none outlives its test.

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
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

/// A running private PostgreSQL.
#[derive(Debug)]
pub struct PostgresServer {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    running: Option<(Child, ChildStdin)>,
}

impl PostgresServer {
    /// initdb and start; panics with one line saying what is missing.
    pub async fn start() -> Self {
        static STARTS: AtomicUsize = AtomicUsize::new(0);
        let bin = bin_dir().unwrap_or_else(|| {
            panic!("PostgreSQL is missing: install it with `apt-get install -y postgresql` (make test does)")
        });
        let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("free port");
        let name = format!("sluice-pg-{}-{}-{port}", std::process::id(), STARTS.fetch_add(1, Ordering::Relaxed));
        let dir = std::env::temp_dir().join(name);
        std::fs::create_dir_all(&dir).expect("postgres directory");
        let data = dir.join("data");
        let mut initdb = as_postgres(&dir, &bin.join("initdb"));
        initdb.arg("-D").arg(&data).args(["-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"]);
        let out = initdb.stdout(Stdio::null()).output().expect("run initdb");
        assert!(out.status.success(), "initdb failed: {}", String::from_utf8_lossy(&out.stderr));
        let mut server = Self { bin, dir, port, running: None };
        server.start_again().await;
        server
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
    pub async fn start_again(&mut self) {
        let mut command = Command::new("sh");
        command.args(["-c", WATCHDOG, "sluice-postgres-watchdog"]);
        let postgres = as_postgres(&self.dir, &self.bin.join("postgres"));
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
        let mut child = command.stdin(Stdio::piped()).spawn().expect("start postgres");
        let lifeline = child.stdin.take().expect("postgres watchdog stdin");
        self.running = Some((child, lifeline));
        let deadline = Instant::now() + START_TIMEOUT;
        let options =
            PgConnectOptions::new().host("127.0.0.1").port(self.port).username("postgres").database("postgres");
        loop {
            match sqlx::ConnectOptions::connect(&options).await {
                Ok(conn) => {
                    let _ = sqlx::Connection::close(conn).await;
                    return;
                }
                Err(e) if Instant::now() >= deadline => panic!("postgres on port {} not ready: {e}", self.port),
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }

    /// A new, empty database for `test`, and a pool on it.
    pub async fn database(&self, test: &str) -> (String, PgPool) {
        static DATABASES: AtomicUsize = AtomicUsize::new(0);
        let stem: String = test
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' })
            .take(40)
            .collect();
        let name = format!("t{}_{stem}", DATABASES.fetch_add(1, Ordering::Relaxed));
        let admin = PgPoolOptions::new().max_connections(1).connect(&self.url("postgres")).await.expect("admin pool");
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
            .execute(&admin)
            .await
            .expect("create database");
        admin.close().await;
        let url = self.url(&name);
        // A stopped server fails an acquire after this, not after sqlx's 30 s default.
        let pool = PgPoolOptions::new()
            .max_connections(10)
            .acquire_timeout(Duration::from_secs(2))
            .connect(&url)
            .await
            .expect("test pool");
        (url, pool)
    }
}

impl Drop for PostgresServer {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

static SHARED: Mutex<Weak<PostgresServer>> = Mutex::new(Weak::new());

/// A test's database on the server this test binary shares.
#[derive(Debug, Clone)]
pub struct TestPostgres {
    server: Arc<PostgresServer>,
    pub url: String,
    pub pool: PgPool,
}

impl TestPostgres {
    /// A fresh database named after `test`.
    pub async fn new(test: &str) -> Self {
        let existing = SHARED.lock().unwrap_or_else(PoisonError::into_inner).upgrade();
        let server = match existing {
            Some(server) => server,
            None => {
                let server = Arc::new(PostgresServer::start().await);
                let mut shared = SHARED.lock().unwrap_or_else(PoisonError::into_inner);
                // Two tests may have started one each; keep the first.
                match shared.upgrade() {
                    Some(first) => first,
                    None => {
                        *shared = Arc::downgrade(&server);
                        server
                    }
                }
            }
        };
        let (url, pool) = server.database(test).await;
        Self { server, url, pool }
    }

    pub fn port(&self) -> u16 {
        self.server.port()
    }
}

/// `program` run as the `postgres` user when we are root (PostgreSQL
/// refuses root), which then owns `dir`.
fn as_postgres(dir: &Path, program: &Path) -> Command {
    let root = Command::new("id").arg("-u").output().map(|o| o.stdout.starts_with(b"0\n")).unwrap_or(false);
    if !root {
        return Command::new(program);
    }
    let status = Command::new("chown").arg("-R").arg("postgres:postgres").arg(dir).status();
    assert!(status.is_ok_and(|s| s.success()), "cannot give {} to the postgres user", dir.display());
    let mut command = Command::new("setpriv");
    command.args(["--reuid=postgres", "--regid=postgres", "--init-groups"]).arg(program);
    command
}

/// The newest installed PostgreSQL's binaries.
fn bin_dir() -> Option<PathBuf> {
    let mut dirs: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
        .filter(|(_, bin)| bin.join("postgres").exists())
        .collect();
    dirs.sort();
    dirs.pop().map(|(_, bin)| bin).or_else(|| {
        let out = Command::new("pg_config").arg("--bindir").output().ok()?;
        let bin = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
        bin.join("postgres").exists().then_some(bin)
    })
}
