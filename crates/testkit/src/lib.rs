//! Test support for sluice.
//!
//! Tests talk to a real `redis-server`: [`TestRedis::new`] starts a private
//! one on a free port the first time a test binary asks (no persistence,
//! stopped when the last test holding it drops it) and gives each test its
//! own key prefix, so tests run in parallel without seeing each other's
//! keys. When `redis-server` is missing, the test fails with one line saying
//! how to install it.
//!
//! # Layout
//!
//! - [`TestRedis`]: the shared server, a connection, the test's keyspace.
//! - [`slot`]: Redis Cluster's key-to-slot function (CRC16), from the spec.
//! - [`crash_point`]: a connection that kills its caller at a chosen command.
//! - [`crash_scenario`]: ingest killed at every such point, checked for loss.
//! - [`processes`]: a process's children and whether one is gone (`/proc`).
//! - `sandbox` (feature `sandbox`): clients wired to the sandbox upstreams.
//! - `pipeline` (feature `pipeline`): work items and tokens for the steps.
//! - `postgres` (feature `postgres`): a private PostgreSQL, a database per test.

pub mod crash_point;
pub mod crash_scenario;
#[cfg(feature = "pipeline")]
pub mod pipeline;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod processes;
#[cfg(feature = "sandbox")]
pub mod sandbox;
pub mod slot;

use redis::aio::MultiplexedConnection;
use sluice_redis::{Keyspace, RedisProcess, ServerOptions};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{SystemTime, UNIX_EPOCH};

pub use slot::key_slot;

/// Wall-clock milliseconds since the Unix epoch, the unit of every
/// timestamp the pipeline stores.
pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

static PLAIN: Mutex<Weak<RedisProcess>> = Mutex::new(Weak::new());
static CLUSTER: Mutex<Weak<RedisProcess>> = Mutex::new(Weak::new());
static TESTS: AtomicUsize = AtomicUsize::new(0);

/// A test's view of the private server: its own key prefix on a shared
/// `redis-server`.
#[derive(Debug, Clone)]
pub struct TestRedis {
    server: Arc<RedisProcess>,
    client: redis::Client,
    keyspace: Keyspace,
}

impl TestRedis {
    /// A plain (non-cluster) server, shared by the tests of this binary.
    pub fn new(test: &str) -> Self {
        Self::shared(&PLAIN, ServerOptions::default(), test)
    }

    /// A one-node cluster-mode server owning every slot: a script that
    /// touches keys of two slots fails on it with CROSSSLOT, as on
    /// ElastiCache in cluster mode.
    pub fn cluster(test: &str) -> Self {
        Self::shared(&CLUSTER, ServerOptions { cluster: true, ..ServerOptions::default() }, test)
    }

    fn shared(slot: &Mutex<Weak<RedisProcess>>, options: ServerOptions, test: &str) -> Self {
        let server = {
            let mut weak = slot.lock().unwrap_or_else(PoisonError::into_inner);
            match weak.upgrade() {
                Some(server) => server,
                None => {
                    let server = Arc::new(RedisProcess::start(options).unwrap_or_else(|e| panic!("{e}")));
                    *weak = Arc::downgrade(&server);
                    server
                }
            }
        };
        let client = redis::Client::open(server.url()).unwrap_or_else(|e| panic!("redis url: {e}"));
        let keyspace = Keyspace::new(prefix_for(test)).unwrap_or_else(|e| panic!("{e}"));
        Self { server, client, keyspace }
    }

    pub fn url(&self) -> String {
        self.server.url()
    }

    /// This test's keyspace: a prefix no other test uses.
    pub fn keyspace(&self) -> Keyspace {
        self.keyspace.clone()
    }

    pub async fn conn(&self) -> MultiplexedConnection {
        self.client
            .get_multiplexed_async_connection()
            .await
            .unwrap_or_else(|e| panic!("connect to the test redis at {}: {e}", self.url()))
    }

    /// Every key this test has written, sorted.
    pub async fn keys(&self) -> Vec<String> {
        let mut conn = self.conn().await;
        let pattern = format!("{}*", self.keyspace.prefix());
        let mut keys = Vec::new();
        let mut cursor: u64 = 0;
        loop {
            let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(1000)
                .query_async(&mut conn)
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
}

/// A prefix unique to this test within the process, safe inside a SCAN
/// pattern and free of hash-tag braces.
fn prefix_for(test: &str) -> String {
    let n = TESTS.fetch_add(1, Ordering::Relaxed);
    let name: String =
        test.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
    format!("t{n}.{name}:")
}
