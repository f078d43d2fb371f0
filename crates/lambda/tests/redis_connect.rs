//! A function's cold start reaches Redis as its settings say, through
//! `start::connect` and `start::core` as every `main` does: TLS with an ACL
//! user and a private CA, and a cluster found without being told; and a
//! refusal names the variable to look at, never the password.

use sluice_config::{Common, EnvSource, StepSettings};
use sluice_lambda::start;
use sluice_testkit::TestRedis;

/// The variables of `redis`, the password in the URL (as a self-hosted
/// setup gives it; in AWS it comes from Secrets Manager).
fn vars(redis: &TestRedis) -> Vec<(&'static str, String)> {
    let settings = redis.settings();
    let url = match &settings.password {
        Some(password) => settings.url.replace("sluice@", &format!("sluice:{password}@")),
        None => settings.url.clone(),
    };
    let mut vars = vec![("SLUICE_REDIS_URL", url), ("SLUICE_KEY_PREFIX", redis.keyspace().prefix().to_owned())];
    if let Some(ca) = settings.ca_file {
        vars.push(("SLUICE_REDIS_CA_FILE", ca.display().to_string()));
    }
    vars
}

/// The core a step function builds from `vars` records and reads a trace.
async fn core_works(vars: Vec<(&'static str, String)>) -> bool {
    let settings = StepSettings::from_source(&EnvSource::from_pairs(vars)).unwrap();
    let core = start::core(&settings).await.unwrap_or_else(|e| panic!("{e}"));
    core.traces().record("ev-1", "received", &serde_json::json!({})).await.unwrap();
    assert_eq!(core.traces().read("ev-1").await.unwrap().len(), 1);
    let conn = start::connect(&settings.common).await.unwrap();
    conn.is_cluster()
}

#[tokio::test]
async fn a_function_reaches_tls_redis_as_an_acl_user_trusting_its_ca() {
    let redis = TestRedis::tls("fn_tls");
    assert!(!core_works(vars(&redis)).await);
}

#[tokio::test]
async fn a_function_finds_a_cluster_without_being_told() {
    let redis = TestRedis::cluster("fn_cluster");
    assert!(core_works(vars(&redis)).await, "SLUICE_REDIS_CLUSTER unset (auto) found the cluster");
}

async fn refused(vars: Vec<(&'static str, String)>) -> String {
    let common = Common::read(&EnvSource::from_pairs(vars)).unwrap();
    start::connect(&common).await.expect_err("the connection should be refused").to_string()
}

#[tokio::test]
async fn refusals_name_the_variable_and_hide_the_password() {
    let redis = TestRedis::tls("fn_refusals");
    let password = redis.settings().password.unwrap();

    let mut wrong_password = vars(&redis);
    wrong_password[0].1 = wrong_password[0].1.replace(&password, "hunter2");
    let said = refused(wrong_password).await;
    assert!(said.starts_with("cannot connect to Redis (SLUICE_REDIS_URL's user"), "{said}");
    assert!(said.contains("the user or password was refused") && !said.contains("hunter2"), "{said}");

    let other_ca = sluice_testkit::unrelated_ca();
    let mut wrong_ca = vars(&redis);
    wrong_ca[2].1 = other_ca.ca_file().display().to_string();
    let said = refused(wrong_ca).await;
    assert!(said.contains("SLUICE_REDIS_CA_FILE") && said.contains("the TLS handshake failed"), "{said}");
    assert!(!said.contains(&password), "{said}");

    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let said = refused(vec![("SLUICE_REDIS_URL", format!("redis://:hunter2@127.0.0.1:{port}"))]).await;
    let endpoint = format!("Redis at redis://127.0.0.1:{port}: unreachable");
    assert!(said.starts_with("cannot connect to Redis (SLUICE_REDIS_URL)") && said.contains(&endpoint), "{said}");
    assert!(!said.contains("hunter2"), "{said}");
}
