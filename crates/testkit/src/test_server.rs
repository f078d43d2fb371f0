//! The servers a test binary starts, each kind at most once (see
//! [`crate::TestRedis`]): a plain `redis-server`; one like ElastiCache's
//! TLS endpoint (TLS only, certificates made by the test, an ACL user
//! with a password, the `default` user off); and a cluster of three
//! masters joined with `redis-cli --cluster create`, each owning a third
//! of the slots, so a call whose keys span slots fails as it does on
//! ElastiCache in cluster mode. The cluster is TLS only with the same ACL
//! user, its bus included (`tls-cluster`), because ElastiCache Serverless
//! is both at once: a client must follow MOVED and ASK to nodes it reaches
//! over TLS, as that user, trusting the same CA.
//!
//! Every process runs under `RedisProcess`'s watchdog: none outlives the
//! test binary, however it ends.

use crate::certificates::TestCertificates;
use sluice_redis::{AclUser, ClusterMode, ConnectSettings, RedisProcess, ServerOptions, ServerTls};
use std::process::Command;
use std::time::{Duration, Instant};

/// The ACL user of the TLS servers.
pub const TEST_USER: &str = "sluice";
/// How long a cluster may take to agree it is whole (a new master waits
/// 2 s before it declares the cluster ok).
const CLUSTER_TIMEOUT: Duration = Duration::from_secs(30);
/// Masters of the test cluster.
pub const CLUSTER_MASTERS: usize = 3;

/// Which server a test talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerKind {
    Plain,
    /// TLS only, with an ACL user and password.
    Tls,
    /// Three masters in cluster mode, TLS only, with the ACL user.
    Cluster,
}

impl ServerKind {
    /// The kind `SLUICE_TEST_REDIS` names (`plain`, `tls` or `cluster`),
    /// plain when unset: how a whole test suite is run on another kind.
    pub fn from_env() -> Self {
        match std::env::var("SLUICE_TEST_REDIS").as_deref() {
            Err(_) | Ok("" | "plain") => Self::Plain,
            Ok("tls") => Self::Tls,
            Ok("cluster") => Self::Cluster,
            Ok(other) => panic!("SLUICE_TEST_REDIS={other:?}: expected plain, tls or cluster"),
        }
    }
}

/// Running servers of one kind, stopped on drop.
#[derive(Debug)]
pub struct TestServer {
    kind: ServerKind,
    /// One, or the cluster's masters.
    nodes: Vec<RedisProcess>,
    password: Option<String>,
    /// Kept until the servers stop: they read them.
    certificates: Option<TestCertificates>,
}

impl TestServer {
    pub fn start(kind: ServerKind) -> Self {
        match kind {
            ServerKind::Plain => Self::plain(ServerOptions::default(), kind),
            ServerKind::Tls => Self::tls(false),
            ServerKind::Cluster => Self::tls(true),
        }
    }

    fn plain(options: ServerOptions, kind: ServerKind) -> Self {
        Self { kind, nodes: vec![start(options)], password: None, certificates: None }
    }

    /// A TLS-only server with the ACL user, or (`cluster`) three such
    /// masters joined into a cluster.
    fn tls(cluster: bool) -> Self {
        let certificates = TestCertificates::server();
        let password = format!("pw-{:016x}", rand_u64());
        let options = ServerOptions {
            cluster,
            tls: Some(ServerTls {
                cert_file: certificates.cert_file(),
                key_file: certificates.key_file(),
                ca_file: certificates.ca_file(),
            }),
            user: Some(AclUser { name: TEST_USER.to_owned(), password: password.clone() }),
            ..ServerOptions::default()
        };
        let (kind, count) = if cluster { (ServerKind::Cluster, CLUSTER_MASTERS) } else { (ServerKind::Tls, 1) };
        let nodes = (0..count).map(|_| start(options.clone())).collect();
        let server = Self { kind, nodes, password: Some(password), certificates: Some(certificates) };
        if cluster {
            server.create_cluster();
            server.wait_until_whole();
        }
        server
    }

    /// `redis-cli` speaking to this server's nodes: over TLS, trusting the
    /// test CA, as the ACL user (the password in `REDISCLI_AUTH`, so it is
    /// neither on the command line nor warned about).
    fn cli(&self) -> Command {
        let mut cli = Command::new("redis-cli");
        if let (Some(ca), Some(password)) = (self.ca_file(), &self.password) {
            cli.arg("--tls").arg("--cacert").arg(ca).args(["--user", TEST_USER]);
            cli.env("REDISCLI_AUTH", password);
        }
        cli
    }

    /// Runs `redis-cli` with `args`: its stdout, or a panic naming the
    /// command and what it said.
    fn run_cli(&self, args: &[String]) -> String {
        let out = self.cli().args(args).output().unwrap_or_else(|e| match e.kind() {
            std::io::ErrorKind::NotFound => {
                panic!("redis-cli is not installed: run `sudo apt-get install -y redis-tools` (Debian/Ubuntu)")
            }
            _ => panic!("redis-cli {}: {e}", args.join(" ")),
        });
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() {
            panic!("redis-cli {} failed: {stdout}{}", args.join(" "), String::from_utf8_lossy(&out.stderr));
        }
        stdout
    }

    /// Joins the nodes into a cluster, the slots split evenly.
    fn create_cluster(&self) {
        let mut args: Vec<String> = vec!["--cluster".into(), "create".into()];
        args.extend(self.nodes.iter().map(|n| format!("127.0.0.1:{}", n.port())));
        args.extend(["--cluster-replicas", "0", "--cluster-yes"].map(String::from));
        self.run_cli(&args);
    }

    /// Polls every node until it says `cluster_state:ok`.
    fn wait_until_whole(&self) {
        let deadline = Instant::now() + CLUSTER_TIMEOUT;
        for node in &self.nodes {
            let ask = ["-p".to_owned(), node.port().to_string(), "CLUSTER".into(), "INFO".into()];
            loop {
                let info = self.run_cli(&ask);
                if info.contains("cluster_state:ok") {
                    break;
                }
                if Instant::now() > deadline {
                    panic!("the cluster is not ok after {CLUSTER_TIMEOUT:?}: {info}");
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    pub fn kind(&self) -> ServerKind {
        self.kind
    }

    /// The URL of the first node: never the password.
    pub fn url(&self) -> String {
        self.nodes[0].url()
    }

    /// The ACL user's password, for a TLS server or the cluster.
    pub fn password(&self) -> Option<&str> {
        self.password.as_deref()
    }

    /// The CA to trust, for a TLS server or the cluster.
    pub fn ca_file(&self) -> Option<std::path::PathBuf> {
        self.certificates.as_ref().map(TestCertificates::ca_file)
    }

    /// How to connect: the whole server (a cluster through its first node).
    pub fn settings(&self) -> ConnectSettings {
        let mut settings = self.node_settings(0);
        if self.kind == ServerKind::Cluster {
            settings.cluster = ClusterMode::On;
        }
        settings
    }

    /// How to connect to node `i` alone (for commands that act on one
    /// node, such as SCAN).
    pub fn node_settings(&self, i: usize) -> ConnectSettings {
        let mut settings = ConnectSettings::new(self.nodes[i].url());
        settings.password = self.password.clone();
        settings.ca_file = self.ca_file();
        settings.cluster = ClusterMode::Off;
        // Generous: tests share two cores; nothing here tests a timeout.
        settings.connect_timeout = Duration::from_secs(5);
        settings.response_timeout = Duration::from_secs(5);
        settings
    }

    pub fn nodes(&self) -> usize {
        self.nodes.len()
    }
}

fn start(options: ServerOptions) -> RedisProcess {
    RedisProcess::start(options).unwrap_or_else(|e| panic!("{e}"))
}

/// A random number for a password, from the standard library's hasher
/// seed (the test kit has no `rand`).
fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::process::id())
}
