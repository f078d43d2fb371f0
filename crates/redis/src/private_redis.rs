//! Private Redis deployments of three shapes, on free ports of 127.0.0.1,
//! each stopped on drop: one plain `redis-server`; one shaped like
//! ElastiCache's TLS endpoint (TLS only, certificates made on the spot, an
//! ACL user with a password, the `default` user off); and a cluster of
//! three such masters joined with `redis-cli --cluster create`, each owning
//! a third of the slots, its bus on TLS too (`tls-cluster`), as ElastiCache
//! Serverless is: cluster mode and TLS at once, so a client must follow
//! MOVED and ASK to nodes it reaches over TLS, as that user, trusting the
//! same CA, and a call whose keys span slots fails with CROSSSLOT.
//!
//! The tests start these (`sluice-testkit`); so does `sluice demo …
//! --private-redis tls-cluster`, to run the deployed functions against
//! what they meet in AWS. Every process runs under `RedisProcess`'s
//! watchdog: none outlives its owner, however it ends.

use crate::connect::{ClusterMode, ConnectSettings};
use crate::private_certificates::PrivateCertificates;
use crate::server::{AclUser, RedisProcess, ServerError, ServerOptions, ServerTls};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

/// The ACL user of the TLS deployments (the template's cache user too).
pub const PRIVATE_USER: &str = "sluice";
/// Masters of the cluster.
pub const CLUSTER_MASTERS: usize = 3;
/// How long a cluster may take to agree it is whole (a new master waits
/// 2 s before it declares the cluster ok).
const CLUSTER_TIMEOUT: Duration = Duration::from_secs(30);

/// Which shape of deployment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeploymentKind {
    Plain,
    /// TLS only, with an ACL user and password.
    Tls,
    /// Three masters in cluster mode, TLS only, with the ACL user.
    Cluster,
}

/// Running servers of one kind, stopped on drop.
#[derive(Debug)]
pub struct PrivateRedis {
    kind: DeploymentKind,
    /// One, or the cluster's masters.
    nodes: Vec<RedisProcess>,
    password: Option<String>,
    /// Kept until the servers stop: they read them.
    certificates: Option<PrivateCertificates>,
}

impl PrivateRedis {
    pub fn start(kind: DeploymentKind) -> Result<Self, ServerError> {
        match kind {
            DeploymentKind::Plain => Self::plain(ServerOptions::default()),
            DeploymentKind::Tls => Self::tls(false),
            DeploymentKind::Cluster => Self::tls(true),
        }
    }

    /// One plain server started with `options`.
    pub fn plain(options: ServerOptions) -> Result<Self, ServerError> {
        let node = RedisProcess::start(options)?;
        Ok(Self { kind: DeploymentKind::Plain, nodes: vec![node], password: None, certificates: None })
    }

    /// A TLS-only server with the ACL user, or (`cluster`) three such
    /// masters joined into a cluster.
    fn tls(cluster: bool) -> Result<Self, ServerError> {
        let certificates = PrivateCertificates::server()?;
        let password = format!("pw-{:016x}", rand::random::<u64>());
        let options = ServerOptions {
            cluster,
            tls: Some(ServerTls {
                cert_file: certificates.cert_file(),
                key_file: certificates.key_file(),
                ca_file: certificates.ca_file(),
            }),
            user: Some(AclUser { name: PRIVATE_USER.to_owned(), password: password.clone() }),
            ..ServerOptions::default()
        };
        let (kind, count) = if cluster { (DeploymentKind::Cluster, CLUSTER_MASTERS) } else { (DeploymentKind::Tls, 1) };
        let nodes = (0..count).map(|_| RedisProcess::start(options.clone())).collect::<Result<_, _>>()?;
        let deployment = Self { kind, nodes, password: Some(password), certificates: Some(certificates) };
        if cluster {
            deployment.create_cluster()?;
            deployment.wait_until_whole()?;
        }
        Ok(deployment)
    }

    /// `redis-cli` speaking to these nodes: over TLS, trusting the CA, as
    /// the ACL user (the password in `REDISCLI_AUTH`, so it is neither on
    /// the command line nor warned about).
    fn cli(&self, args: &[String]) -> Result<String, ServerError> {
        let mut cli = Command::new("redis-cli");
        if let (Some(ca), Some(password)) = (self.ca_file(), &self.password) {
            cli.arg("--tls").arg("--cacert").arg(ca).args(["--user", PRIVATE_USER]);
            cli.env("REDISCLI_AUTH", password);
        }
        let out = cli.args(args).output().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => ServerError::Failed(
                "redis-cli is not installed: run `sudo apt-get install -y redis-tools` (Debian/Ubuntu)".into(),
            ),
            _ => ServerError::Io(e),
        })?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            return Err(ServerError::Failed(format!("redis-cli {} failed: {stdout}{stderr}", args.join(" "))));
        }
        Ok(stdout)
    }

    /// Joins the nodes into a cluster, the slots split evenly.
    fn create_cluster(&self) -> Result<(), ServerError> {
        let mut args: Vec<String> = vec!["--cluster".into(), "create".into()];
        args.extend(self.nodes.iter().map(|n| format!("127.0.0.1:{}", n.port())));
        args.extend(["--cluster-replicas", "0", "--cluster-yes"].map(String::from));
        self.cli(&args).map(drop)
    }

    /// Polls every node until it says `cluster_state:ok`.
    fn wait_until_whole(&self) -> Result<(), ServerError> {
        let deadline = Instant::now() + CLUSTER_TIMEOUT;
        for node in &self.nodes {
            let ask = ["-p".to_owned(), node.port().to_string(), "CLUSTER".into(), "INFO".into()];
            loop {
                let info = self.cli(&ask)?;
                if info.contains("cluster_state:ok") {
                    break;
                }
                if Instant::now() > deadline {
                    return Err(ServerError::Failed(format!(
                        "the cluster is not ok after {CLUSTER_TIMEOUT:?}: {info}"
                    )));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Ok(())
    }

    pub fn kind(&self) -> DeploymentKind {
        self.kind
    }

    /// The URL of the first node: never the password.
    pub fn url(&self) -> String {
        self.nodes[0].url()
    }

    /// The URL of the first node with the password in it, for what takes
    /// its credentials from a URL alone.
    pub fn url_with_password(&self) -> String {
        let url = self.url();
        match &self.password {
            Some(password) => url.replacen(&format!("{PRIVATE_USER}@"), &format!("{PRIVATE_USER}:{password}@"), 1),
            None => url,
        }
    }

    /// The ACL user's password, for a TLS server or the cluster.
    pub fn password(&self) -> Option<&str> {
        self.password.as_deref()
    }

    /// The CA to trust, for a TLS server or the cluster.
    pub fn ca_file(&self) -> Option<PathBuf> {
        self.certificates.as_ref().map(PrivateCertificates::ca_file)
    }

    /// How to connect: the whole deployment (a cluster through its first node).
    pub fn settings(&self) -> ConnectSettings {
        let mut settings = self.node_settings(0);
        if self.kind == DeploymentKind::Cluster {
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
        // Generous: private deployments share a machine with their users.
        settings.connect_timeout = Duration::from_secs(5);
        settings.response_timeout = Duration::from_secs(5);
        settings
    }

    pub fn nodes(&self) -> usize {
        self.nodes.len()
    }

    /// Node `i`'s port.
    pub fn port(&self, i: usize) -> u16 {
        self.nodes[i].port()
    }
}
