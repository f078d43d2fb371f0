//! Test support for sluice.
//!
//! Tests talk to a real `redis-server`: [`TestRedis::new`] starts a private
//! one on a free port the first time a test binary asks (no persistence,
//! stopped when the last test holding it drops it) and gives each test its
//! own key prefix, so tests run in parallel without seeing each other's
//! keys. When `redis-server` is missing, the test fails with one line saying
//! how to install it.
//!
//! Besides the plain server, [`TestRedis::tls`] is shaped like ElastiCache's
//! TLS endpoint (TLS only, an ACL user and password, certificates the test
//! made) and [`TestRedis::cluster`] is a cluster of three masters, TLS only
//! with the same user, as ElastiCache Serverless is
//! ([`TestRedis::cluster_with_replicas`]: with a replica per master, for
//! failover tests); every
//! kind is reached through `sluice_redis::connect`, as the deployables
//! reach theirs. `SLUICE_TEST_REDIS=tls|cluster` makes [`TestRedis::new`]
//! start that kind instead, to run a whole suite on it.
//!
//! # Layout
//!
//! - [`TestRedis`]: the shared server, a connection, the test's keyspace.
//! - [`test_server`]: which kind of server `SLUICE_TEST_REDIS` names; `sluice_private_servers::PrivateRedis` starts it.
//! - [`server_info`]: a server's CPU time and commands processed, from `INFO`.
//! - [`round_trips`]: a connection that counts its requests to Redis and the round trips waited for.
//! - [`aws_prices`]: the AWS prices of the benchmarks' cost tables, with their sources.
//! - [`slot`]: Redis Cluster's key-to-slot function (CRC16), from the spec.
//! - [`slot_check`]: a connection that records every script call whose keys span two slots.
//! - [`alert_listener`]: an alert webhook on 127.0.0.1 that keeps what sluice sends.
//! - [`chaos_report`]: a chaos run's row of `bench/chaos.md`.
//! - [`crash_point`]: a connection that kills its caller at a chosen command.
//! - [`crash_scenario`]: ingest killed at every such point, checked for loss.
//! - [`failover`]: a cluster master killed (or switched) for its replica to take over.
//! - [`latency_proxy`]: a TCP proxy that slows every round trip to a Redis by a delay a test changes.
//! - [`processes`]: a process's children and whether one is gone (`/proc`).
//! - `sandbox` (feature `sandbox`): clients wired to the sandbox upstreams.
//! - `pipeline` (feature `pipeline`): work items and tokens for the steps.
//! - `postgres` (feature `postgres`): a private PostgreSQL, a database per test.

pub mod alert_listener;
pub mod aws_prices;
pub mod chaos_report;
pub mod crash_point;
pub mod crash_scenario;
pub mod failover;
pub mod latency_proxy;
#[cfg(feature = "pipeline")]
pub mod pipeline;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod processes;
pub mod round_trips;
#[cfg(feature = "sandbox")]
pub mod sandbox;
pub mod server_info;
pub mod slot;
pub mod slot_check;
pub mod test_server;

use sluice_redis::{ConnectSettings, Connection, Keyspace};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{SystemTime, UNIX_EPOCH};

pub use latency_proxy::LatencyProxy;
pub use slot::key_slot;
pub use test_server::{CLUSTER_MASTERS, ServerKind, TEST_USER, TestCertificates, TestServer, unrelated_ca};

/// Wall-clock milliseconds since the Unix epoch, the unit of every
/// timestamp the pipeline stores.
pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// The running server of each kind, shared by the tests of this binary.
static PLAIN: Mutex<Weak<TestServer>> = Mutex::new(Weak::new());
static TLS: Mutex<Weak<TestServer>> = Mutex::new(Weak::new());
static CLUSTER: Mutex<Weak<TestServer>> = Mutex::new(Weak::new());
static TESTS: AtomicUsize = AtomicUsize::new(0);

/// `cluster-node-timeout` of [`TestRedis::cluster_with_replicas`]: low, so
/// a killed master's replica is promoted within seconds, yet above the
/// pauses of a node on a busy 2-core machine (a node that misses it is
/// failed over too).
pub const NODE_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(2000);

/// A test's view of a private server: its own key prefix on a shared
/// `redis-server` (or cluster).
#[derive(Debug, Clone)]
pub struct TestRedis {
    server: Arc<TestServer>,
    keyspace: Keyspace,
}

impl TestRedis {
    /// The server `SLUICE_TEST_REDIS` names, plain when unset.
    pub fn new(test: &str) -> Self {
        Self::of(test_server::kind_from_env(), test)
    }

    /// A plain server, whatever `SLUICE_TEST_REDIS` says: for tests that
    /// need one server (a process of their own, a `redis::Client`).
    pub fn plain(test: &str) -> Self {
        Self::of(ServerKind::Plain, test)
    }

    /// A TLS-only server with an ACL user and password.
    pub fn tls(test: &str) -> Self {
        Self::of(ServerKind::Tls, test)
    }

    /// A cluster of three masters: a script or pipeline whose keys span
    /// two slots fails on it with CROSSSLOT, as on ElastiCache in cluster
    /// mode.
    pub fn cluster(test: &str) -> Self {
        Self::of(ServerKind::Cluster, test)
    }

    /// A cluster of three masters with a replica each, all its own (not
    /// shared: the test fails a master over, see [`failover`]); a node
    /// unanswered for [`NODE_TIMEOUT`] counts failed.
    pub fn cluster_with_replicas(test: &str) -> Self {
        let server = TestServer::cluster_with_replicas(NODE_TIMEOUT).unwrap_or_else(|e| panic!("{e}"));
        let keyspace = Keyspace::new(prefix_for(test)).unwrap_or_else(|e| panic!("{e}"));
        Self { server: Arc::new(server), keyspace }
    }

    pub fn of(kind: ServerKind, test: &str) -> Self {
        let slot = match kind {
            ServerKind::Plain => &PLAIN,
            ServerKind::Tls => &TLS,
            ServerKind::Cluster => &CLUSTER,
        };
        let server = {
            let mut weak = slot.lock().unwrap_or_else(PoisonError::into_inner);
            match weak.upgrade() {
                Some(server) => server,
                None => {
                    let server = Arc::new(test_server::start(kind));
                    *weak = Arc::downgrade(&server);
                    server
                }
            }
        };
        let keyspace = Keyspace::new(prefix_for(test)).unwrap_or_else(|e| panic!("{e}"));
        Self { server, keyspace }
    }

    pub fn kind(&self) -> ServerKind {
        self.server.kind()
    }

    /// The server's URL (a cluster's first node), without the password.
    pub fn url(&self) -> String {
        self.server.url()
    }

    pub fn server(&self) -> &TestServer {
        &self.server
    }

    /// How `sluice_redis::connect` reaches this server.
    pub fn settings(&self) -> ConnectSettings {
        self.server.settings()
    }

    /// This test's keyspace: a prefix no other test uses.
    pub fn keyspace(&self) -> Keyspace {
        self.keyspace.clone()
    }

    pub async fn conn(&self) -> Connection {
        sluice_redis::connect(&self.settings())
            .await
            .unwrap_or_else(|e| panic!("connect to the test redis at {}: {e}", self.url()))
    }

    /// Enrols these malls and Google credentials as tenants, as storing
    /// their tokens would (ingest refuses work for any other), for tests
    /// that send webhooks or rows without storing tokens.
    pub async fn enrol(&self, malls: &[&str], credentials: &[&str]) {
        let enrolments = sluice_redis::Enrolments::new(self.conn().await, self.keyspace());
        let tags = malls.iter().map(|m| (sluice_redis::Tag::for_mall(m), sluice_redis::enrolment::CAFE24_TOKEN));
        let google = sluice_redis::credential_state::GOOGLE_TOKEN;
        let tags = tags.chain(credentials.iter().map(|c| (sluice_redis::Tag::for_credential(c), google)));
        for (tag, name) in tags {
            enrolments.enrol(&tag, name, 1).await.unwrap_or_else(|e| panic!("enrol {tag:?}: {e}"));
        }
    }

    /// Every key this test has written, sorted.
    pub async fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.keys_by_node().await.into_iter().flatten().collect();
        keys.sort();
        keys
    }

    /// This test's keys on each node (one node unless a cluster), sorted.
    /// On a cluster with replicas every node answers, replicas too, and
    /// all must be up: a failover test reads its keys otherwise.
    pub async fn keys_by_node(&self) -> Vec<Vec<String>> {
        let mut nodes = Vec::new();
        for i in 0..self.server.nodes() {
            let mut conn = sluice_redis::connect(&self.server.node_settings(i))
                .await
                .unwrap_or_else(|e| panic!("connect to test redis node {i}: {e}"));
            nodes.push(scan(&mut conn, &format!("{}*", self.keyspace.prefix())).await);
        }
        nodes
    }
}

/// The keys of one node matching `pattern`, sorted.
async fn scan(conn: &mut Connection, pattern: &str) -> Vec<String> {
    let mut keys = Vec::new();
    let mut cursor: u64 = 0;
    loop {
        let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(pattern)
            .arg("COUNT")
            .arg(1000)
            .query_async(conn)
            .await
            .unwrap_or_else(|e| panic!("SCAN: {e}"));
        keys.extend(batch);
        if next == 0 {
            break;
        }
        cursor = next;
    }
    keys.sort();
    keys
}

/// A prefix unique to this test within the process, safe inside a SCAN
/// pattern and free of hash-tag braces.
fn prefix_for(test: &str) -> String {
    let n = TESTS.fetch_add(1, Ordering::Relaxed);
    let name: String =
        test.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
    format!("t{n}.{name}:")
}
