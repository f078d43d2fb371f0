//! [`Connection`]: the one Redis connection every deployable holds, over a
//! standalone server (a `ConnectionManager`, which reconnects by itself) or
//! a cluster (`cluster_async::ClusterConnection`, which follows MOVED and
//! ASK, and refreshes its slot map by itself). Everything above it (the
//! primitives, the queue store, the pipeline) is generic over
//! `redis::aio::ConnectionLike` and never asks which one it has.
//!
//! [`connect`](crate::connect()) builds one from [`ConnectSettings`](crate::ConnectSettings).

use redis::aio::ConnectionManager;
use redis::cluster_async::ClusterConnection;

/// `impl redis::aio::ConnectionLike` for a connection that hands each
/// request on, from what it does with each: a command (`$cmd`), a
/// pipeline's commands (`$pipeline`, `$offset`, `$count`) and the database
/// number, each an expression of `$this` (the connection). The trait's
/// signatures, written once for every connection that forwards to another:
/// [`Connection`], and the testkit's counting, slot-checking and crashing
/// connections.
#[macro_export]
macro_rules! forward_requests {
    (
        impl [$($generics:tt)*] $type:ty, |$this:ident| {
            command($cmd:ident) => $command:expr,
            pipeline($pipeline:ident, $offset:ident, $count:ident) => $commands:expr,
            db => $db:expr $(,)?
        }
    ) => {
        impl<$($generics)*> ::redis::aio::ConnectionLike for $type {
            fn req_packed_command<'a>(
                &'a mut self,
                $cmd: &'a ::redis::Cmd,
            ) -> ::redis::RedisFuture<'a, ::redis::Value> {
                let $this = self;
                $command
            }

            fn req_packed_commands<'a>(
                &'a mut self,
                $pipeline: &'a ::redis::Pipeline,
                $offset: usize,
                $count: usize,
            ) -> ::redis::RedisFuture<'a, Vec<::redis::Value>> {
                let $this = self;
                $commands
            }

            fn get_db(&self) -> i64 {
                let $this = self;
                $db
            }
        }
    };
}

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

forward_requests! {
    impl[] Connection, |this| {
        command(cmd) => match this {
            Connection::Standalone(conn) => conn.req_packed_command(cmd),
            Connection::Cluster(conn) => conn.req_packed_command(cmd),
        },
        pipeline(pipeline, offset, count) => match this {
            Connection::Standalone(conn) => conn.req_packed_commands(pipeline, offset, count),
            Connection::Cluster(conn) => conn.req_packed_commands(pipeline, offset, count),
        },
        db => match this {
            Connection::Standalone(conn) => conn.get_db(),
            Connection::Cluster(conn) => conn.get_db(),
        },
    }
}
