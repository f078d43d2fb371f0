//! The drain's database URL with `sslmode=verify-full`, as docs/deploy.md
//! tells a deployment to write it, against a private PostgreSQL serving TLS
//! with a certificate from a CA of its own: the drain's connect
//! (`sluice_sink::connect`, sqlx on rustls with webpki-roots) takes the
//! mode, refuses the server while it cannot check the certificate (a CA it
//! does not carry, or the wrong one given), and connects over TLS once
//! given the CA (`sslrootcert`). `sslmode=require`, what the docs said
//! before, connects to the same server unchecked: it encrypts, but to
//! whoever answers.

use sluice_private_servers::PrivateCertificates;
use sluice_testkit::postgres::PostgresServer;
use sqlx::PgPool;
use std::path::Path;
use std::time::{Duration, Instant};

/// `from` copied into the server's data directory `data` as `name`, the
/// data directory's owner's (the postgres user's under root) and private:
/// PostgreSQL refuses a key file others can read.
fn server_file(data: &Path, name: &str, from: &Path) {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let owner = std::fs::metadata(data).unwrap();
    let to = data.join(name);
    std::fs::copy(from, &to).unwrap();
    std::os::unix::fs::chown(&to, Some(owner.uid()), Some(owner.gid())).unwrap();
    std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// Whether a connection of `pool` is over TLS.
async fn over_tls(pool: &PgPool) -> bool {
    sqlx::query_scalar("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").fetch_one(pool).await.unwrap()
}

#[tokio::test]
async fn verify_full_connects_only_to_a_server_whose_certificate_it_can_check() {
    let certs = PrivateCertificates::server().unwrap();
    let unrelated = PrivateCertificates::unrelated_ca().unwrap();
    let server = PostgresServer::start().await.unwrap();
    let admin = sluice_sink::connect(&server.url("postgres")).await.unwrap();
    let data: String = sqlx::query_scalar("SHOW data_directory").fetch_one(&admin).await.unwrap();
    server_file(Path::new(&data), "server.crt", &certs.cert_file());
    server_file(Path::new(&data), "server.key", &certs.key_file());
    // One statement at a time: ALTER SYSTEM refuses the implicit
    // transaction of a multi-statement query.
    for statement in [
        "ALTER SYSTEM SET ssl_cert_file = 'server.crt'",
        "ALTER SYSTEM SET ssl_key_file = 'server.key'",
        "ALTER SYSTEM SET ssl = on",
        "SELECT pg_reload_conf()",
    ] {
        sqlx::raw_sql(statement).execute(&admin).await.unwrap();
    }
    let url = |query: &str| format!("postgres://postgres@localhost:{}/postgres?{query}", server.port());
    // The reload is asynchronous: wait until the server takes TLS at all.
    let deadline = Instant::now() + Duration::from_secs(10);
    let encrypted = loop {
        match sluice_sink::connect(&url("sslmode=require")).await {
            Ok(pool) => break pool,
            Err(e) if Instant::now() >= deadline => panic!("the server never took TLS: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    };
    assert!(over_tls(&encrypted).await, "sslmode=require connects over TLS");

    let unchecked = sluice_sink::connect(&url("sslmode=verify-full")).await;
    let error = unchecked.expect_err("verify-full accepted a certificate from a CA it does not carry").to_string();
    assert!(error.contains("invalid peer certificate: UnknownIssuer"), "{error}");
    assert!(error.contains("localhost:") && !error.contains("postgres://"), "names the endpoint, not the URL: {error}");
    let wrong_ca = format!("sslmode=verify-full&sslrootcert={}", unrelated.ca_file().display());
    sluice_sink::connect(&url(&wrong_ca)).await.expect_err("verify-full accepted a certificate another CA signed");

    let checked = format!("sslmode=verify-full&sslrootcert={}", certs.ca_file().display());
    let pool = sluice_sink::connect(&url(&checked)).await.expect("verify-full with the server's CA");
    assert!(over_tls(&pool).await, "verify-full connects over TLS");
}
