//! A private `redis-server` process on a free port of 127.0.0.1, with no
//! persistence, stopped and cleaned up on drop. Tests spawn one per test
//! binary; `sluice` spawns one when `SLUICE_REDIS_URL` is unset, so a fresh
//! machine needs only the `redis-server` package.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How long a server may take to say it is ready.
const START_TIMEOUT: Duration = Duration::from_secs(15);
/// A free port can be taken by someone else between our probe and the
/// server's bind; try a few ports before giving up.
const PORT_ATTEMPTS: usize = 5;

/// What kind of server to start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerOptions {
    /// Start in cluster mode as a one-node cluster owning all 16384 slots,
    /// so that every cross-slot access fails exactly as on a real cluster.
    pub cluster: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("redis-server is not installed: run `sudo apt-get install -y redis-server` (Debian/Ubuntu)")]
    NotInstalled,
    #[error("could not start redis-server: {0}")]
    Io(#[from] std::io::Error),
    #[error("redis-server did not start: {0}")]
    Failed(String),
    #[error("could not set up the one-node cluster: {0}")]
    Cluster(#[from] redis::RedisError),
}

/// A running private `redis-server`.
#[derive(Debug)]
pub struct RedisProcess {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl RedisProcess {
    pub fn start(options: ServerOptions) -> Result<Self, ServerError> {
        let mut last = String::new();
        for _ in 0..PORT_ATTEMPTS {
            match Self::try_start(options)? {
                Ok(server) => {
                    if options.cluster {
                        server.claim_all_slots()?;
                    }
                    return Ok(server);
                }
                Err(log) if log.contains("Address already in use") => last = log,
                Err(log) => return Err(ServerError::Failed(log)),
            }
        }
        Err(ServerError::Failed(format!("no free port after {PORT_ATTEMPTS} attempts: {last}")))
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Ok(Ok(server)) when ready; Ok(Err(log)) when the server exited early.
    fn try_start(options: ServerOptions) -> Result<Result<Self, String>, ServerError> {
        static STARTS: AtomicUsize = AtomicUsize::new(0);
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let dir = std::env::temp_dir().join(format!(
            "sluice-redis-{}-{}-{port}",
            std::process::id(),
            STARTS.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir)?;
        let mut command = Command::new("redis-server");
        command
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--logfile", "", "--daemonize", "no"])
            .arg("--dir")
            .arg(&dir);
        if options.cluster {
            command.args(["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"]);
        }
        let spawned = command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn();
        let mut child = match spawned {
            Ok(child) => child,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(ServerError::NotInstalled);
            }
            Err(e) => return Err(e.into()),
        };
        let stdout = child.stdout.take().ok_or_else(|| ServerError::Failed("no stdout".into()))?;
        let (lines, log) = mpsc::channel();
        // The reader keeps draining the server's log after start-up, so the
        // pipe never fills and blocks the server.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = lines.send(line);
            }
        });
        let mut server = Self { child, port, dir };
        let deadline = Instant::now() + START_TIMEOUT;
        let mut seen = Vec::new();
        loop {
            match log.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(line) if line.contains("Ready to accept connections") => return Ok(Ok(server)),
                Ok(line) => seen.push(line),
                Err(RecvTimeoutError::Disconnected) => {
                    let _ = server.child.wait();
                    return Ok(Err(seen.join("\n")));
                }
                Err(RecvTimeoutError::Timeout) => {
                    server.stop();
                    return Err(ServerError::Failed(format!(
                        "not ready after {START_TIMEOUT:?}; its log:\n{}",
                        seen.join("\n")
                    )));
                }
            }
        }
    }

    fn claim_all_slots(&self) -> Result<(), ServerError> {
        let mut con = redis::Client::open(self.url())?.get_connection()?;
        redis::cmd("CLUSTER").arg("ADDSLOTSRANGE").arg(0).arg(16383).exec(&mut con)?;
        let deadline = Instant::now() + START_TIMEOUT;
        // The node flips to cluster_state:ok on its next cluster cron tick.
        loop {
            let info: String = redis::cmd("CLUSTER").arg("INFO").query(&mut con)?;
            if info.contains("cluster_state:ok") {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(ServerError::Failed(format!("cluster not ok after {START_TIMEOUT:?}: {info}")));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Drop for RedisProcess {
    fn drop(&mut self) {
        self.stop();
    }
}
