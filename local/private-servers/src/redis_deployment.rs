//! Private Redis deployments of three shapes, on free ports of 127.0.0.1,
//! each stopped on drop: one plain `redis-server`; one shaped like
//! ElastiCache's TLS endpoint (TLS only, certificates made on the spot, an
//! ACL user with a password, the `default` user off); and a cluster of
//! three such masters joined with `redis-cli --cluster create`, each owning
//! a third of the slots, its bus on TLS too (`tls-cluster`), as ElastiCache
//! Serverless is: cluster mode and TLS at once, so a client must follow
//! MOVED and ASK to nodes it reaches over TLS, as that user, trusting the
//! same CA, and a call whose keys span slots fails with CROSSSLOT. The
//! cluster also comes with a replica per master
//! ([`PrivateRedis::cluster_with_replicas`]), for tests that fail a
//! master over.
//!
//! The tests start these (`sluice-testkit`); so does `sluice demo …
//! --private-redis tls-cluster`, to run the deployed functions against
//! what they meet in AWS. Every process runs under `RedisProcess`'s
//! watchdog: none outlives its owner, however it ends.

use crate::certificates::PrivateCertificates;
use crate::redis_server::{AclUser, RedisProcess, ServerError, ServerOptions, ServerTls};
use sluice_redis::{ClusterMode, ConnectSettings};
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

/// A cluster's shape: replicas or not, and how soon a node counts failed.
#[derive(Debug, Clone, Copy)]
struct ClusterShape {
    replicas: bool,
    node_timeout: Option<Duration>,
}

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
            DeploymentKind::Tls => Self::tls(None),
            DeploymentKind::Cluster => Self::tls(Some(ClusterShape { replicas: false, node_timeout: None })),
        }
    }

    /// One plain server started with `options`.
    pub fn plain(options: ServerOptions) -> Result<Self, ServerError> {
        let node = RedisProcess::start(options)?;
        Ok(Self { kind: DeploymentKind::Plain, nodes: vec![node], password: None, certificates: None })
    }

    /// A TLS-only cluster of three masters, each with one replica (six
    /// `redis-server`s), returned once every replica is in sync: what a
    /// failover test breaks. A node unanswered for `node_timeout` is
    /// counted failed and its replica promoted in its place, as an
    /// ElastiCache node failure is handled (there in tens of seconds).
    pub fn cluster_with_replicas(node_timeout: Duration) -> Result<Self, ServerError> {
        Self::tls(Some(ClusterShape { replicas: true, node_timeout: Some(node_timeout) }))
    }

    /// A TLS-only server with the ACL user, or (`cluster`) such nodes
    /// joined into a cluster of that shape.
    fn tls(cluster: Option<ClusterShape>) -> Result<Self, ServerError> {
        let certificates = PrivateCertificates::server()?;
        let password = format!("pw-{:016x}", rand::random::<u64>());
        let options = ServerOptions {
            cluster: cluster.is_some(),
            cluster_node_timeout: cluster.and_then(|c| c.node_timeout),
            tls: Some(ServerTls {
                cert_file: certificates.cert_file(),
                key_file: certificates.key_file(),
                ca_file: certificates.ca_file(),
            }),
            user: Some(AclUser { name: PRIVATE_USER.to_owned(), password: password.clone() }),
            ..ServerOptions::default()
        };
        let (kind, count) = match cluster {
            None => (DeploymentKind::Tls, 1),
            Some(ClusterShape { replicas: false, .. }) => (DeploymentKind::Cluster, CLUSTER_MASTERS),
            Some(ClusterShape { replicas: true, .. }) => (DeploymentKind::Cluster, 2 * CLUSTER_MASTERS),
        };
        let nodes = (0..count).map(|_| RedisProcess::start(options.clone())).collect::<Result<_, _>>()?;
        let deployment = Self { kind, nodes, password: Some(password), certificates: Some(certificates) };
        if let Some(shape) = cluster {
            deployment.create_cluster(shape.replicas)?;
            deployment.wait_until_whole()?;
            if shape.replicas {
                deployment.wait_until_replicas_in_sync()?;
            }
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

    /// Joins the nodes into a cluster, the slots split evenly over three
    /// masters; with `replicas`, `redis-cli` makes each of the other three
    /// nodes the replica of one master.
    fn create_cluster(&self, replicas: bool) -> Result<(), ServerError> {
        let mut args: Vec<String> = vec!["--cluster".into(), "create".into()];
        args.extend(self.nodes.iter().map(|n| format!("127.0.0.1:{}", n.port())));
        let replicas = if replicas { "1" } else { "0" };
        args.extend(["--cluster-replicas", replicas, "--cluster-yes"].map(String::from));
        self.cli(&args).map(drop)
    }

    /// Polls until every master has its replica attached and caught up
    /// (`INFO replication`: `state=online`, the replica's link up and no
    /// sync in progress) and every node knows all six: a replica still
    /// loading its first copy, or one the other masters have not heard
    /// of, cannot be promoted (the masters vote on it).
    fn wait_until_replicas_in_sync(&self) -> Result<(), ServerError> {
        self.poll_nodes("the replicas are not in sync", |port| {
            let replication = self.cli(&["-p".into(), port.into(), "INFO".into(), "replication".into()])?;
            let nodes = self.cli(&["-p".into(), port.into(), "CLUSTER".into(), "NODES".into()])?;
            let in_sync = if replication.contains("role:master") {
                replication.contains("connected_slaves:1") && replication.contains("state=online")
            } else {
                replication.contains("master_link_status:up") && replication.contains("master_sync_in_progress:0")
            };
            let known = nodes.lines().filter(|l| !l.contains("handshake") && !l.contains("noaddr")).count();
            Ok((in_sync && known == self.nodes.len()).then_some(()).ok_or(format!("{replication}{nodes}")))
        })
    }

    /// Polls every node until it says `cluster_state:ok`.
    fn wait_until_whole(&self) -> Result<(), ServerError> {
        self.poll_nodes("the cluster is not ok", |port| {
            let info = self.cli(&["-p".into(), port.into(), "CLUSTER".into(), "INFO".into()])?;
            Ok(if info.contains("cluster_state:ok") { Ok(()) } else { Err(info) })
        })
    }

    /// Asks `ready` of each node's port in turn until it says `Ok(())`,
    /// all within [`CLUSTER_TIMEOUT`]; else fails with `not_yet` and what
    /// the last node said.
    fn poll_nodes(
        &self,
        not_yet: &str,
        ready: impl Fn(&str) -> Result<Result<(), String>, ServerError>,
    ) -> Result<(), ServerError> {
        let deadline = Instant::now() + CLUSTER_TIMEOUT;
        for node in &self.nodes {
            let port = node.port().to_string();
            while let Err(said) = ready(&port)? {
                if Instant::now() > deadline {
                    return Err(ServerError::Failed(format!(
                        "{not_yet} after {CLUSTER_TIMEOUT:?}: node {port} says {said}"
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
        self.node_url_with_password(0)
    }

    /// Node `i`'s URL with the password in it: a cluster reached through
    /// another node than the first (one a test will not stop).
    pub fn node_url_with_password(&self, i: usize) -> String {
        let url = self.nodes[i].url();
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
