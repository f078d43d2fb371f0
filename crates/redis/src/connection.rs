//! [`Connection`]: the one Redis connection every deployable holds, over a
//! standalone server (a `ConnectionManager`, which reconnects by itself) or
//! a cluster (`cluster_async::ClusterConnection`, which follows MOVED and
//! ASK, and refreshes its slot map by itself). Everything above it (the
//! primitives, the queue store, the pipeline) is generic over
//! `redis::aio::ConnectionLike` and never asks which one it has.
//!
//! [`connect`](crate::connect()) builds one from [`ConnectSettings`](crate::ConnectSettings).

use redis::aio::{ConnectionLike, ConnectionManager};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};

/// A connection to a standalone Redis or to a cluster.
#[derive(Clone)]
pub enum Connection {
    Standalone(ConnectionManager),
    Cluster(ClusterConnection),
}

impl Connection {
    /// Whether this is a cluster-mode connection.
    pub fn is_cluster(&self) -> bool {
        matches!(self, Self::Cluster(_))
    }
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Neither inner type prints anything useful; a connection's URL may
        // carry a password, so it is not shown either.
        f.write_str(match self {
            Self::Standalone(_) => "Connection::Standalone",
            Self::Cluster(_) => "Connection::Cluster",
        })
    }
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Self::Standalone(conn) => conn.req_packed_command(cmd),
            Self::Cluster(conn) => conn.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Self::Standalone(conn) => conn.req_packed_commands(pipeline, offset, count),
            Self::Cluster(conn) => conn.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Self::Standalone(conn) => conn.get_db(),
            Self::Cluster(conn) => conn.get_db(),
        }
    }
}
