//! A private `redis-server` process on a free port of 127.0.0.1, stopped on
//! drop. Tests spawn one per test binary (no persistence, its directory
//! removed afterwards); `sluice` spawns one when `SLUICE_REDIS_URL` is
//! unset, so a fresh machine needs only the `redis-server` package, and
//! `sluice dev` gives it a data directory with an append-only file, so a
//! killed run loses nothing the queue acknowledged.
//!
//! The server runs under a small `sh` watchdog that holds a pipe from us:
//! when this process ends in any way (even SIGKILL, where no destructor
//! runs) the pipe closes and the watchdog stops the server, so no orphaned
//! `redis-server` outlives its owner. It runs in a process group of its
//! own, so a terminal's Ctrl-C reaches only us, and it serves until our
//! graceful stop is done.
//!
//! Tests also start servers shaped like ElastiCache: TLS only with an ACL
//! user ([`ServerTls`], [`AclUser`]), and cluster-enabled nodes that
//! `sluice-testkit` joins into a cluster.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How long a server may take to say it is ready.
const START_TIMEOUT: Duration = Duration::from_secs(15);
/// A free port can be taken by someone else between our probe and the
/// server's bind; try a few ports before giving up.
const PORT_ATTEMPTS: usize = 5;

/// What kind of server to start.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerOptions {
    /// Start with cluster support (`--cluster-enabled yes`) and no slots:
    /// a node for someone (`redis-cli --cluster create`) to join into a
    /// cluster. Its cluster bus gets a free port of its own.
    pub cluster: bool,
    /// Serve TLS only (`--port 0`, `--tls-port`), with these files.
    pub tls: Option<ServerTls>,
    /// Accept only this ACL user (the `default` user is switched off).
    pub user: Option<AclUser>,
    /// Keep the data here, in an append-only file (fsync as `fsync` says),
    /// and reload it on the next start with the same directory. `None`:
    /// no persistence, a temporary directory removed on drop.
    pub data_dir: Option<PathBuf>,
    /// When the append-only file is synced to disk (with `data_dir` only).
    pub fsync: AppendFsync,
    /// Listen on this port instead of a free one: a server restarted where
    /// its clients already point (no retry on another port if it is taken).
    pub port: Option<u16>,
    /// With `cluster`: how long a node may go unanswered before the others
    /// count it failed and its replica takes over (`cluster-node-timeout`;
    /// Redis's default, 15 s, when `None`). Failover tests set it low so a
    /// killed master's replica is promoted in a few seconds.
    pub cluster_node_timeout: Option<Duration>,
}

/// Redis's `appendfsync`: how much an acknowledged write can lose.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AppendFsync {
    /// Once a second: a crash of the machine may lose the last second
    /// (a crash of the server alone loses nothing: the file is written).
    #[default]
    EverySec,
    /// Before every reply: nothing acknowledged is lost, even to a power cut.
    Always,
}

impl AppendFsync {
    fn as_arg(self) -> &'static str {
        match self {
            Self::EverySec => "everysec",
            Self::Always => "always",
        }
    }
}

/// The certificate files of a TLS server. Clients are not asked for
/// certificates (ElastiCache does not ask either).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerTls {
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
    /// The CA that signed `cert_file` (redis-server wants one to start).
    pub ca_file: PathBuf,
}

/// An ACL user allowed every command on every key.
#[derive(Clone, PartialEq, Eq)]
pub struct AclUser {
    pub name: String,
    pub password: String,
}

impl std::fmt::Debug for AclUser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AclUser").field("name", &self.name).finish_non_exhaustive()
    }
}

/// Runs `redis-server "$@"` and stops it (SIGTERM, so an append-only file
/// is flushed) when our end of its stdin closes. The shell gives up the
/// log pipe, so the pipe closes as soon as the server exits on its own.
///
/// With a data directory, the server first takes an exclusive lock on
/// `$SLUICE_REDIS_LOCK` there, which it holds until it exits: a run started
/// right after a killed one waits for the old server to finish stopping
/// instead of loading the append-only file while the old one still writes
/// to it.
const WATCHDOG: &str = r#"exec 3<&0
if [ -n "$SLUICE_REDIS_LOCK" ] && command -v flock >/dev/null 2>&1; then
  exec 9>"$SLUICE_REDIS_LOCK"
  flock -w 10 9 || { echo "another redis-server still holds $SLUICE_REDIS_LOCK"; exit 1; }
fi
redis-server "$@" <&- &
server=$!
exec 1>/dev/null
stop() { kill "$server" 2>/dev/null; wait "$server"; }
trap stop EXIT
trap 'exit 0' TERM INT
read -r _ <&3
"#;

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("redis-server is not installed: run `sudo apt-get install -y redis-server` (Debian/Ubuntu)")]
    NotInstalled,
    #[error("could not start redis-server: {0}")]
    Io(#[from] std::io::Error),
    #[error("redis-server did not start: {0}")]
    Failed(String),
}

/// A running private `redis-server`.
#[derive(Debug)]
pub struct RedisProcess {
    /// The watchdog shell.
    child: Child,
    /// Our end of the watchdog's stdin: dropping it stops the server.
    lifeline: Option<ChildStdin>,
    port: u16,
    /// Whether it serves TLS, and as which user: what its URL says.
    tls: bool,
    user: Option<String>,
    dir: PathBuf,
    /// Whether `dir` is ours to remove (no persistence asked for).
    temporary: bool,
}

impl RedisProcess {
    pub fn start(options: ServerOptions) -> Result<Self, ServerError> {
        let mut last = String::new();
        if !on_path("redis-server") {
            return Err(ServerError::NotInstalled);
        }
        for _ in 0..PORT_ATTEMPTS {
            match Self::try_start(&options)? {
                Ok(server) => return Ok(server),
                Err(log) if log.contains("Address already in use") && options.port.is_none() => last = log,
                Err(log) => return Err(ServerError::Failed(log)),
            }
        }
        Err(ServerError::Failed(format!("no free port after {PORT_ATTEMPTS} attempts: {last}")))
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `redis://127.0.0.1:<port>/`, or `rediss://<user>@…` for a TLS
    /// server with a user: never the password.
    pub fn url(&self) -> String {
        let scheme = if self.tls { "rediss" } else { "redis" };
        let user = self.user.as_ref().map(|u| format!("{u}@")).unwrap_or_default();
        format!("{scheme}://{user}127.0.0.1:{}/", self.port)
    }

    /// Ok(Ok(server)) when ready; Ok(Err(log)) when the server exited early.
    fn try_start(options: &ServerOptions) -> Result<Result<Self, String>, ServerError> {
        static STARTS: AtomicUsize = AtomicUsize::new(0);
        let port = match options.port {
            Some(port) => port,
            None => free_port()?,
        };
        let (dir, temporary) = match &options.data_dir {
            Some(dir) => (dir.clone(), false),
            None => {
                let name =
                    format!("sluice-redis-{}-{}-{port}", std::process::id(), STARTS.fetch_add(1, Ordering::Relaxed));
                (std::env::temp_dir().join(name), true)
            }
        };
        std::fs::create_dir_all(&dir)?;
        let mut command = Command::new("sh");
        command.args(["-c", WATCHDOG, "sluice-redis-watchdog"]);
        // A process group of its own: Ctrl-C in a terminal signals the
        // whole foreground group, and the server must outlive our graceful
        // stop (the workers finishing their batches still use it); the
        // watchdog stops it once we are gone.
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let port_arg = port.to_string();
        let (plain_port, tls_port) =
            if options.tls.is_some() { ("0", port_arg.as_str()) } else { (port_arg.as_str(), "0") };
        command
            .args(["--port", plain_port, "--tls-port", tls_port, "--bind", "127.0.0.1"])
            .args(["--save", "", "--logfile", "", "--daemonize", "no"])
            .arg("--dir")
            .arg(&dir);
        if temporary {
            command.args(["--appendonly", "no"]);
        } else {
            command.args(["--appendonly", "yes", "--appendfsync", options.fsync.as_arg()]);
            command.env("SLUICE_REDIS_LOCK", dir.join("redis.lock"));
        }
        if options.cluster {
            command.args(["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"]);
            command.args(["--cluster-port", &free_port()?.to_string()]);
            if let Some(timeout) = options.cluster_node_timeout {
                command.args(["--cluster-node-timeout", &timeout.as_millis().to_string()]);
            }
        }
        if let Some(tls) = &options.tls {
            command.arg("--tls-cert-file").arg(&tls.cert_file).arg("--tls-key-file").arg(&tls.key_file);
            command.arg("--tls-ca-cert-file").arg(&tls.ca_file).args(["--tls-auth-clients", "no"]);
            if options.cluster {
                // A replica copies its master over TLS too, as ElastiCache's do.
                command.args(["--tls-cluster", "yes", "--tls-replication", "yes"]);
            }
        }
        if let Some(user) = &options.user {
            // The password reaches the server as an argument: visible in
            // `ps` to this machine's users, which is fine for test servers.
            command.args(["--user", "default", "off"]);
            command.args(["--user", &user.name, "on", &format!(">{}", user.password), "~*", "&*", "+@all"]);
            if options.cluster {
                // A node that is (or becomes) a replica logs in to its
                // master as that user: `default` is off.
                command.args(["--masteruser", &user.name, "--masterauth", &user.password]);
            }
        }
        let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn()?;
        let lifeline = child.stdin.take();
        let stdout = child.stdout.take().ok_or_else(|| ServerError::Failed("no stdout".into()))?;
        let (lines, log) = mpsc::channel();
        // The reader keeps draining the server's log after start-up, so the
        // pipe never fills and blocks the server.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = lines.send(line);
            }
        });
        let tls = options.tls.is_some();
        let user = options.user.as_ref().map(|u| u.name.clone());
        let mut server = Self { child, lifeline, port, tls, user, dir, temporary };
        let deadline = Instant::now() + START_TIMEOUT;
        let mut seen = Vec::new();
        loop {
            match log.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(line) if line.contains("Ready to accept connections") => return Ok(Ok(server)),
                Ok(line) => seen.push(line),
                Err(RecvTimeoutError::Disconnected) => {
                    server.stop();
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

    fn stop(&mut self) {
        // Closing the lifeline makes the watchdog stop the server and wait
        // for it, so a persistent server has flushed its file when we return.
        drop(self.lifeline.take());
        let _ = self.child.wait();
        if self.temporary {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// A port of 127.0.0.1 free at this moment.
pub(crate) fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Whether `program` is an executable file in a `PATH` directory.
fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|dir| {
            std::fs::metadata(dir.join(program)).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

impl Drop for RedisProcess {
    fn drop(&mut self) {
        self.stop();
    }
}
