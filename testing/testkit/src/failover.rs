//! A master of a [`TestRedis::cluster_with_replicas`] failed over while a
//! test runs: [`TestRedis::fail_over`] finds the master that owns a key's
//! slot and its replica, then either kills the master (`kill -9`, a node
//! failure: the other masters count it failed after the cluster's node
//! timeout and elect the replica) or asks the replica to take over
//! (`CLUSTER FAILOVER`, coordinated: the master stops taking writes until
//! the replica has all of them). It returns once the replica serves the
//! slot as a master and every live node says `cluster_state:ok`.
//!
//! Everything here asks the nodes themselves (`CLUSTER NODES`, `ROLE`,
//! `CLUSTER INFO`), polling against a deadline.

use crate::{TestRedis, key_slot};
use redis::aio::ConnectionLike;
use std::time::{Duration, Instant};

/// How long a failover may take, from the kill (or the request) to the
/// replica serving as master on a cluster whose nodes all say ok.
pub const FAILOVER_LIMIT: Duration = Duration::from_secs(30);

/// How the master is failed over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailoverKind {
    /// `kill -9` of the master's process: the realistic case (a node
    /// lost), where writes the master acknowledged but had not yet sent to
    /// its replica are gone (replication is asynchronous).
    Kill,
    /// `CLUSTER FAILOVER` on the replica: a planned switch (ElastiCache's
    /// maintenance, `TestFailover` in a shard), no write lost.
    Graceful,
}

/// One node as `CLUSTER NODES` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterNode {
    pub id: String,
    /// Its index in the deployment (`TestRedis::server().port(i)`).
    pub index: usize,
    pub master: bool,
    /// The master it replicates, for a replica.
    pub master_id: Option<String>,
    /// Counted failed (`fail` or `fail?`) by the node asked.
    pub failed: bool,
    /// Slot ranges it serves, both ends included.
    pub slots: Vec<(u16, u16)>,
}

/// What a failover did, and when.
#[derive(Debug, Clone)]
pub struct Failover {
    pub kind: FailoverKind,
    /// The old master's and the promoted replica's indexes.
    pub master: usize,
    pub replica: usize,
    /// The kill, or the `CLUSTER FAILOVER` sent.
    pub started: Instant,
    /// The replica first seen serving the slot on a cluster all ok.
    pub promoted: Instant,
}

impl TestRedis {
    /// The cluster as node `via` sees it.
    pub async fn cluster_nodes(&self, via: usize) -> Vec<ClusterNode> {
        let text: String = self.node_command(via, redis::cmd("CLUSTER").arg("NODES")).await;
        text.lines().map(|line| self.parse_node(line)).collect()
    }

    /// The index of the master serving `key`'s slot, as node `via` sees it.
    pub async fn master_of(&self, key: &str, via: usize) -> usize {
        let slot = key_slot(key);
        let nodes = self.cluster_nodes(via).await;
        let owner =
            nodes.iter().find(|n| n.master && !n.failed && n.slots.iter().any(|&(a, b)| a <= slot && slot <= b));
        owner.unwrap_or_else(|| panic!("no live master serves slot {slot} of {key:?}: {nodes:?}")).index
    }

    /// Fails over the master serving `key`'s slot (see the module docs),
    /// asking node `via`, which must not be that master.
    pub async fn fail_over(&self, key: &str, via: usize, kind: FailoverKind) -> Failover {
        let nodes = self.cluster_nodes(via).await;
        let master = self.master_of(key, via).await;
        assert_ne!(master, via, "ask another node than the one failed over");
        let master_id = &nodes.iter().find(|n| n.index == master).expect("the master listed").id;
        let replica = nodes
            .iter()
            .find(|n| n.master_id.as_ref() == Some(master_id) && !n.failed)
            .unwrap_or_else(|| panic!("master {master} has no live replica: {nodes:?}"))
            .index;
        let started = Instant::now();
        match kind {
            FailoverKind::Kill => {
                let info: String = self.node_command(master, redis::cmd("INFO").arg("server")).await;
                let pid = info.lines().find_map(|l| l.strip_prefix("process_id:")).expect("process_id").trim();
                let killed = std::process::Command::new("kill").args(["-9", pid]).status().expect("kill");
                assert!(killed.success(), "kill -9 {pid} (node {master})");
            }
            FailoverKind::Graceful => {
                let _: String = self.node_command(replica, redis::cmd("CLUSTER").arg("FAILOVER")).await;
            }
        }
        let deadline = started + FAILOVER_LIMIT;
        loop {
            if self.serves_as_master(replica, key_slot(key), (kind == FailoverKind::Kill).then_some(master)).await {
                return Failover { kind, master, replica, started, promoted: Instant::now() };
            }
            assert!(
                Instant::now() < deadline,
                "node {replica} did not take over from node {master} within {FAILOVER_LIMIT:?} ({kind:?}): {:?}",
                self.cluster_nodes(replica).await
            );
            // Each look opens a TLS connection per node: not too often, on
            // a machine the cluster shares with the run it serves.
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Whether `node` says it is a master serving `slot` and every node
    /// but `dead` says the cluster is ok.
    async fn serves_as_master(&self, node: usize, slot: u16, dead: Option<usize>) -> bool {
        let role: Vec<redis::Value> = self.node_command(node, &redis::cmd("ROLE")).await;
        if !matches!(role.first(), Some(redis::Value::BulkString(r)) if r == b"master") {
            return false;
        }
        let mine = self.cluster_nodes(node).await.into_iter().find(|n| n.index == node);
        if !mine.is_some_and(|n| n.slots.iter().any(|&(a, b)| a <= slot && slot <= b)) {
            return false;
        }
        for i in (0..self.server().nodes()).filter(|&i| Some(i) != dead) {
            let info: String = self.node_command(i, redis::cmd("CLUSTER").arg("INFO")).await;
            if !info.contains("cluster_state:ok") {
                return false;
            }
        }
        true
    }

    /// `cmd` on node `i` alone, on a connection of its own.
    async fn node_command<T: redis::FromRedisValue>(&self, i: usize, cmd: &redis::Cmd) -> T {
        let mut conn = sluice_redis::connect(&self.server().node_settings(i))
            .await
            .unwrap_or_else(|e| panic!("connect to cluster node {i}: {e}"));
        let value = conn.req_packed_command(cmd).await.unwrap_or_else(|e| panic!("node {i}: {cmd:?}: {e}"));
        redis::from_redis_value(value).unwrap_or_else(|e| panic!("node {i}: {cmd:?}: {e}"))
    }

    /// A line of `CLUSTER NODES`: `<id> <ip:port@bus> <flags> <master> <ping>
    /// <pong> <epoch> <link> <slot ranges…>`.
    fn parse_node(&self, line: &str) -> ClusterNode {
        let fields: Vec<&str> = line.split_whitespace().collect();
        assert!(fields.len() >= 8, "a CLUSTER NODES line: {line:?}");
        let port: u16 = fields[1].split(['@', ',']).next().and_then(|a| a.rsplit(':').next()?.parse().ok()).unwrap();
        let index = (0..self.server().nodes()).find(|&i| self.server().port(i) == port);
        let flags: Vec<&str> = fields[2].split(',').collect();
        let slots = fields[8..]
            .iter()
            .filter(|r| !r.starts_with('['))
            .map(|r| match r.split_once('-') {
                Some((a, b)) => (a.parse().unwrap(), b.parse().unwrap()),
                None => (r.parse().unwrap(), r.parse().unwrap()),
            })
            .collect();
        ClusterNode {
            id: fields[0].to_owned(),
            index: index.unwrap_or_else(|| panic!("port {port} is none of this deployment's: {line:?}")),
            master: flags.contains(&"master"),
            master_id: (fields[3] != "-").then(|| fields[3].to_owned()),
            failed: flags.iter().any(|f| f.starts_with("fail")),
            slots,
        }
    }
}
