//! Certificates made on the spot for a private TLS `redis-server`: a CA of
//! its own and a server certificate it signs for `127.0.0.1` and
//! `localhost`, written as PEM files to a temporary directory removed on
//! drop. The server serves them; a client is told to trust the CA
//! (`SLUICE_REDIS_CA_FILE`), as it would a private CA in front of a real
//! deployment. Made with `rcgen` on ring, so aws-lc stays out of the build.

use crate::redis_server::ServerError;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A directory of PEM files: `ca.pem`, and with [`PrivateCertificates::server`]
/// also `server.pem` and `server-key.pem`.
#[derive(Debug)]
pub struct PrivateCertificates {
    dir: PathBuf,
}

impl PrivateCertificates {
    /// A CA and a server certificate signed by it.
    pub fn server() -> Result<Self, ServerError> {
        let files = Self::empty()?;
        let (ca_params, ca_key) = ca("sluice private CA")?;
        let issuer = Issuer::from_params(&ca_params, &ca_key);
        let mut params =
            CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()]).map_err(failed)?;
        params.distinguished_name.push(DnType::CommonName, "sluice private redis-server");
        let key = KeyPair::generate().map_err(failed)?;
        let cert = params.signed_by(&key, &issuer).map_err(failed)?;
        let ca_cert = ca_params.self_signed(&ca_key).map_err(failed)?;
        files.write("ca.pem", &ca_cert.pem())?;
        files.write("server.pem", &cert.pem())?;
        files.write("server-key.pem", &key.serialize_pem())?;
        Ok(files)
    }

    /// A CA that signed nothing here: trusting it instead of the right one
    /// must fail the TLS handshake.
    pub fn unrelated_ca() -> Result<Self, ServerError> {
        let files = Self::empty()?;
        let (params, key) = ca("some other CA")?;
        files.write("ca.pem", &params.self_signed(&key).map_err(failed)?.pem())?;
        Ok(files)
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

    fn empty() -> Result<Self, ServerError> {
        static MADE: AtomicUsize = AtomicUsize::new(0);
        let name = format!("sluice-tls-{}-{}", std::process::id(), MADE.fetch_add(1, Ordering::Relaxed));
        let dir = std::env::temp_dir().join(name);
        std::fs::create_dir_all(&dir)?;
        Ok(Self { dir })
    }

    fn write(&self, name: &str, pem: &str) -> Result<(), ServerError> {
        Ok(std::fs::write(self.dir.join(name), pem)?)
    }
}

impl Drop for PrivateCertificates {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A self-signed CA's parameters and key.
fn ca(name: &str) -> Result<(CertificateParams, KeyPair), ServerError> {
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(failed)?;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    Ok((params, KeyPair::generate().map_err(failed)?))
}

fn failed(e: rcgen::Error) -> ServerError {
    ServerError::Failed(format!("cannot make the TLS certificates: {e}"))
}
