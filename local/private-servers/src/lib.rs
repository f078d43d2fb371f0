//! Private servers started on this machine, each on a free port of
//! 127.0.0.1 and stopped on drop: `redis-server` in the shapes sluice meets
//! in AWS (plain; TLS only with an ACL user, like ElastiCache's endpoint; a
//! TLS cluster, like ElastiCache Serverless) and a PostgreSQL. Tests start
//! them (`sluice-testkit`), and so do `sluice dev` and `sluice demo` when
//! no URL names a running server.
//!
//! Nothing here runs in AWS, so no crate that ships depends on this one
//! but the `sluice` CLI (`tests/tests/local_dependencies.rs` checks it);
//! the others use it only in their tests and benchmarks.
//!
//! # Layout
//!
//! - [`redis_server`]: one `redis-server` process under a watchdog, with
//!   its options (TLS, ACL user, cluster mode, persistence).
//! - [`redis_deployment`]: deployments shaped like ElastiCache (plain, TLS
//!   with an ACL user, a TLS cluster with or without replicas), and how to
//!   connect to them.
//! - [`certificates`]: a CA and a server certificate made on the spot for
//!   the TLS deployments.
//! - `postgres` (feature `postgres`): a private PostgreSQL (initdb +
//!   postgres), a database per caller.

pub mod certificates;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod redis_deployment;
pub mod redis_server;

pub use certificates::PrivateCertificates;
#[cfg(feature = "postgres")]
pub use postgres::{PostgresServer, ServerError as PostgresServerError};
pub use redis_deployment::{CLUSTER_MASTERS, DeploymentKind, PRIVATE_USER, PrivateRedis};
pub use redis_server::{AclUser, AppendFsync, RedisProcess, ServerError, ServerOptions, ServerTls};
