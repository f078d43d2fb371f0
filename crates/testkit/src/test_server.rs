//! The servers a test binary starts, each kind at most once (see
//! [`crate::TestRedis`]): a plain `redis-server`; one like ElastiCache's
//! TLS endpoint (TLS only, certificates made by the test, an ACL user
//! with a password, the `default` user off); and a cluster of three
//! masters joined with `redis-cli --cluster create`, each owning a third
//! of the slots, so a call whose keys span slots fails as it does on
//! ElastiCache in cluster mode.
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
    /// Three masters in cluster mode.
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
            ServerKind::Tls => Self::tls(),
            ServerKind::Cluster => Self::cluster(),
        }
    }

    fn plain(options: ServerOptions, kind: ServerKind) -> Self {
        Self { kind, nodes: vec![start(options)], password: None, certificates: None }
    }

    fn tls() -> Self {
        let certificates = TestCertificates::server();
        let password = format!("pw-{:016x}", rand_u64());
        let options = ServerOptions {
            tls: Some(ServerTls {
                cert_file: certificates.cert_file(),
                key_file: certificates.key_file(),
                ca_file: certificates.ca_file(),
            }),
            user: Some(AclUser { name: TEST_USER.to_owned(), password: password.clone() }),
            ..ServerOptions::default()
        };
        Self {
            kind: ServerKind::Tls,
            nodes: vec![start(options)],
            password: Some(password),
            certificates: Some(certificates),
        }
    }

    fn cluster() -> Self {
        let options = ServerOptions { cluster: true, ..ServerOptions::default() };
        let nodes: Vec<RedisProcess> = (0..CLUSTER_MASTERS).map(|_| start(options.clone())).collect();
        let mut create = Command::new("redis-cli");
        create.arg("--cluster").arg("create");
        create.args(nodes.iter().map(|n| format!("127.0.0.1:{}", n.port())));
        create.args(["--cluster-replicas", "0", "--cluster-yes"]);
        let out = create.output().unwrap_or_else(|e| match e.kind() {
            std::io::ErrorKind::NotFound => {
                panic!("redis-cli is not installed: run `sudo apt-get install -y redis-tools` (Debian/Ubuntu)")
            }
            _ => panic!("redis-cli --cluster create: {e}"),
        });
        if !out.status.success() {
            panic!(
                "redis-cli --cluster create failed: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let server = Self { kind: ServerKind::Cluster, nodes, password: None, certificates: None };
        server.wait_until_whole();
        server
    }

    /// Polls every node until it says `cluster_state:ok`.
    fn wait_until_whole(&self) {
        let deadline = Instant::now() + CLUSTER_TIMEOUT;
        for node in &self.nodes {
            let mut conn = redis::Client::open(node.url())
                .and_then(|c| c.get_connection())
                .unwrap_or_else(|e| panic!("cluster node {}: {e}", node.port()));
            loop {
                let info: String = redis::cmd("CLUSTER")
                    .arg("INFO")
                    .query(&mut conn)
                    .unwrap_or_else(|e| panic!("CLUSTER INFO on {}: {e}", node.port()));
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

    /// The ACL user's password, for a TLS server.
    pub fn password(&self) -> Option<&str> {
        self.password.as_deref()
    }

    /// The CA to trust, for a TLS server.
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
