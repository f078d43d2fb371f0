//! Certificates made by the test: a CA of its own and a server certificate
//! it signs for `127.0.0.1` and `localhost`, written as PEM files to a
//! temporary directory that is removed on drop. What a TLS `redis-server`
//! serves, and what a client is told to trust (`SLUICE_REDIS_CA_FILE`).

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A directory of PEM files: `ca.pem`, and with [`TestCertificates::server`]
/// also `server.pem` and `server-key.pem`.
#[derive(Debug)]
pub struct TestCertificates {
    dir: PathBuf,
}

impl TestCertificates {
    /// A CA and a server certificate signed by it.
    pub fn server() -> Self {
        let files = Self::empty();
        let (ca_params, ca_key) = ca("sluice test CA");
        let issuer = Issuer::from_params(&ca_params, &ca_key);
        let mut params = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
            .unwrap_or_else(|e| panic!("server certificate: {e}"));
        params.distinguished_name.push(DnType::CommonName, "sluice test redis-server");
        let key = KeyPair::generate().unwrap_or_else(|e| panic!("server key: {e}"));
        let cert = params.signed_by(&key, &issuer).unwrap_or_else(|e| panic!("sign the server certificate: {e}"));
        let ca_cert = ca_params.self_signed(&ca_key).unwrap_or_else(|e| panic!("CA certificate: {e}"));
        files.write("ca.pem", &ca_cert.pem());
        files.write("server.pem", &cert.pem());
        files.write("server-key.pem", &key.serialize_pem());
        files
    }

    /// A CA that signed nothing here: trusting it instead of the right one
    /// must fail the TLS handshake.
    pub fn unrelated_ca() -> Self {
        let files = Self::empty();
        let (params, key) = ca("some other CA");
        let cert = params.self_signed(&key).unwrap_or_else(|e| panic!("CA certificate: {e}"));
        files.write("ca.pem", &cert.pem());
        files
    }

    pub fn ca_file(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }

    pub fn cert_file(&self) -> PathBuf {
        self.dir.join("server.pem")
    }

    pub fn key_file(&self) -> PathBuf {
        self.dir.join("server-key.pem")
    }

    fn empty() -> Self {
        static MADE: AtomicUsize = AtomicUsize::new(0);
        let name = format!("sluice-tls-{}-{}", std::process::id(), MADE.fetch_add(1, Ordering::Relaxed));
        let dir = std::env::temp_dir().join(name);
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        Self { dir }
    }

    fn write(&self, name: &str, pem: &str) {
        let path: &Path = &self.dir.join(name);
        std::fs::write(path, pem).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

impl Drop for TestCertificates {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A self-signed CA's parameters and key.
fn ca(name: &str) -> (CertificateParams, KeyPair) {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap_or_else(|e| panic!("CA: {e}"));
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    let key = KeyPair::generate().unwrap_or_else(|e| panic!("CA key: {e}"));
    (params, key)
}
