//! `sluice_redis::connect` against real servers: it finds out by itself
//! whether a server is a cluster, speaks TLS as an ACL user with the
//! password given apart from the URL, and says what went wrong, naming the
//! endpoint and never the password, when the server is unreachable, its
//! certificate is not trusted, or the password is wrong.

use sluice_redis::{ClusterMode, ConnectError, ConnectSettings, Refusal, connect};
use sluice_testkit::TestRedis;
use std::time::Duration;

async fn ping(settings: &ConnectSettings) -> String {
    let mut conn = connect(settings).await.unwrap_or_else(|e| panic!("{e}"));
    redis::cmd("PING").query_async(&mut conn).await.unwrap()
}

/// The refusal `settings` meet, after checking the message names the
/// endpoint and hides the password.
async fn refusal(settings: &ConnectSettings, password: &str) -> Refusal {
    let err = connect(settings).await.expect_err("the connection should be refused");
    let shown = err.to_string();
    assert!(!shown.contains(password), "the password leaked: {shown}");
    match err {
        ConnectError::Refused { refusal, endpoint, .. } => {
            assert!(shown.contains(&endpoint), "{shown}");
            refusal
        }
        other => panic!("expected a refusal, got {other}"),
    }
}

#[tokio::test]
async fn auto_finds_a_cluster_and_a_single_server_by_asking_them() {
    let cluster = TestRedis::cluster("auto_cluster");
    let mut settings = cluster.settings();
    settings.cluster = ClusterMode::Auto;
    assert!(connect(&settings).await.unwrap().is_cluster());
    let plain = TestRedis::plain("auto_plain");
    assert!(!connect(&plain.settings()).await.unwrap().is_cluster());
    assert_eq!(ping(&plain.settings()).await, "PONG");
}

#[tokio::test]
async fn tls_with_an_acl_user_and_the_password_given_apart_from_the_url() {
    let redis = TestRedis::tls("tls_password");
    let settings = redis.settings();
    assert!(settings.url.starts_with("rediss://sluice@127.0.0.1:") && settings.password.is_some());
    assert_eq!(ping(&settings).await, "PONG");
    // The same password in the URL instead, as a self-hosted setup gives it.
    let password = settings.password.clone().unwrap();
    let mut in_url = settings.clone();
    in_url.url = settings.url.replace("sluice@", &format!("sluice:{password}@"));
    in_url.password = None;
    assert_eq!(ping(&in_url).await, "PONG");
}

#[tokio::test]
async fn a_wrong_password_is_refused_as_credentials() {
    let redis = TestRedis::tls("tls_wrong_password");
    let mut settings = redis.settings();
    settings.reconnect_retries = 0;
    settings.password = Some("not-the-password".into());
    for mode in [ClusterMode::Auto, ClusterMode::Off, ClusterMode::On] {
        settings.cluster = mode;
        assert_eq!(refusal(&settings, "not-the-password").await, Refusal::Credentials, "{mode:?}");
    }
    // No password at all: the connection opens, but the first command is
    // refused, and connect says so rather than the first step.
    settings.password = None;
    for mode in [ClusterMode::Auto, ClusterMode::Off, ClusterMode::On] {
        settings.cluster = mode;
        assert_eq!(refusal(&settings, "not-the-password").await, Refusal::Credentials, "no password, {mode:?}");
    }
}

#[tokio::test]
async fn a_certificate_from_another_ca_fails_the_handshake() {
    let redis = TestRedis::tls("tls_wrong_ca");
    let other = sluice_testkit::unrelated_ca();
    let mut settings = redis.settings();
    settings.reconnect_retries = 0;
    settings.ca_file = Some(other.ca_file());
    let password = settings.password.clone().unwrap();
    assert_eq!(refusal(&settings, &password).await, Refusal::Tls);
    // Without a CA file only the public roots are trusted: refused too.
    settings.ca_file = None;
    assert_eq!(refusal(&settings, &password).await, Refusal::Tls);
    // Plain text to a TLS port never gets an answer it understands.
    settings.url = settings.url.replace("rediss://", "redis://");
    settings.connect_timeout = Duration::from_millis(500);
    settings.response_timeout = Duration::from_millis(500);
    assert!(connect(&settings).await.is_err());
}

#[tokio::test]
async fn nothing_listening_is_unreachable_for_both_kinds() {
    // A port just freed: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    for mode in [ClusterMode::Auto, ClusterMode::On, ClusterMode::Off] {
        let mut settings = ConnectSettings::new(format!("redis://:hunter2@127.0.0.1:{port}"));
        settings.cluster = mode;
        settings.reconnect_retries = 0;
        assert_eq!(refusal(&settings, "hunter2").await, Refusal::Unreachable, "{mode:?}");
    }
}

#[tokio::test]
async fn a_missing_ca_file_and_a_ca_file_without_tls_are_named() {
    let mut settings = ConnectSettings::new("rediss://sluice@127.0.0.1:1");
    settings.ca_file = Some("/nonexistent/ca.pem".into());
    let err = connect(&settings).await.unwrap_err().to_string();
    assert!(err.starts_with("cannot read the CA file /nonexistent/ca.pem"), "{err}");
    settings.url = "redis://127.0.0.1:1".into();
    let err = connect(&settings).await.unwrap_err().to_string();
    assert_eq!(err, "a CA file is set but redis://127.0.0.1:1 does not use TLS (rediss://)");
}
