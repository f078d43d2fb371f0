//! The deployments a test binary starts, each kind at most once (see
//! [`crate::TestRedis`]): `sluice_private_servers::PrivateRedis`'s plain
//! server, its TLS endpoint like ElastiCache's, and its TLS-only cluster of
//! three masters like ElastiCache Serverless. Here only what is the tests' own:
//! which kind `SLUICE_TEST_REDIS` names, and a panic in place of an error.

pub use sluice_private_servers::{
    CLUSTER_MASTERS, DeploymentKind as ServerKind, PRIVATE_USER as TEST_USER, PrivateCertificates as TestCertificates,
    PrivateRedis as TestServer,
};

/// The kind `SLUICE_TEST_REDIS` names (`plain`, `tls` or `cluster`),
/// plain when unset: how a whole test suite is run on another kind.
pub fn kind_from_env() -> ServerKind {
    match std::env::var("SLUICE_TEST_REDIS").as_deref() {
        Err(_) | Ok("" | "plain") => ServerKind::Plain,
        Ok("tls") => ServerKind::Tls,
        Ok("cluster") => ServerKind::Cluster,
        Ok(other) => panic!("SLUICE_TEST_REDIS={other:?}: expected plain, tls or cluster"),
    }
}

/// Starts a deployment of `kind`, or fails the test saying why.
pub fn start(kind: ServerKind) -> TestServer {
    TestServer::start(kind).unwrap_or_else(|e| panic!("{e}"))
}

/// A CA that signed nothing here: trusting it must fail the handshake.
pub fn unrelated_ca() -> TestCertificates {
    TestCertificates::unrelated_ca().unwrap_or_else(|e| panic!("{e}"))
}
