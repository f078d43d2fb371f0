//! The HTTP client every sluice crate starts from: the Cafe24 and Google
//! Sheets clients, the alert sender, the sandbox's webhook sender, the demos
//! and the tests.
//!
//! # Why a crate for one function
//! reqwest's `rustls` feature brings the aws-lc-rs crypto provider, a C
//! library whose build alone took 77 s of the release build that `make run`
//! starts with (on 2 cores, a fifth of it). The workspace takes reqwest with
//! `rustls-no-provider` instead and uses *ring*, which the AWS SDK clients in
//! `sluice-aws` and the Redis client use too, so one provider is compiled.
//! Without a provider, reqwest panics when a client is built; [`builder`]
//! installs ring as the process default first, so every client built through
//! it works, in binaries and tests alike.

use std::sync::Once;

/// What sluice says it is in every request.
pub const USER_AGENT: &str = concat!("sluice/", env!("CARGO_PKG_VERSION"));

/// A reqwest client builder with the ring crypto provider installed and
/// sluice's user agent set. Callers add their timeouts and redirect policy.
pub fn builder() -> reqwest::ClientBuilder {
    install_ring();
    reqwest::Client::builder().user_agent(USER_AGENT)
}

/// A client with reqwest's defaults (no timeout): for tests and demos that
/// talk to 127.0.0.1.
pub fn client() -> reqwest::Client {
    // Only a TLS setup failure makes build() fail; with ring installed and no
    // custom roots there is none left to make, so this is unreachable.
    builder().build().expect("a reqwest client with default settings builds")
}

/// Makes ring the process's rustls provider once. Another provider already
/// installed (by a binary that chose one) is kept: any provider serves.
fn install_ring() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _already_installed = rustls::crypto::ring::default_provider().install_default();
    });
}

#[cfg(test)]
mod tests {
    #[test]
    fn builds_clients_with_ring_as_the_process_provider() {
        super::builder().build().expect("first client");
        super::client();
        assert!(rustls::crypto::CryptoProvider::get_default().is_some(), "a provider is installed");
    }
}
