//! A function whose configuration cannot work fails its cold start with
//! one log line naming the variable or endpoint, reports it to the Runtime
//! API's `/init/error`, and exits, never panicking; the invocation that
//! waited gets that report, with the line. Checked with the real binaries.

use crate::support;

use sluice_domain::Secret;
use sluice_lambda_runtime::{Endpoints, FunctionError, LocalLambda, Template};
use sluice_testkit::TestRedis;
use sluice_testkit::processes::{children, is_gone};
use support::{INVOKE_TIMEOUT, batch, bindings, start};

/// Invokes `function`, expecting its cold start to fail; checks what every
/// such failure must show and returns it.
async fn failed_cold_start(lambda: &LocalLambda, function: &str, payload: String) -> FunctionError {
    let pool = lambda.function(function).unwrap_or_else(|| panic!("no {function}")).clone();
    let error = tokio::time::timeout(INVOKE_TIMEOUT, pool.invoke(payload))
        .await
        .expect("a failed cold start answers in time")
        .expect_err("the cold start should fail");
    assert_eq!(error.error_type, "Runtime.InitError", "{error}");
    assert!(error.error_message.contains("cannot start"), "{error}");
    let logged: Vec<&String> = error.log_tail.iter().filter(|l| l.contains("cannot start")).collect();
    assert_eq!(logged.len(), 1, "one log line says why: {error}");
    assert!(!error.log_tail.iter().any(|l| l.contains("panicked")), "{error}");
    assert_eq!(pool.cold_starts(), 1);
    assert!(pool.idle_pids().is_empty(), "the failed environment is not kept");
    error
}

#[tokio::test]
async fn an_unreachable_redis_fails_the_cold_start_naming_the_variable_and_no_password() {
    let redis = TestRedis::new("cold_start_redis");
    // Port 1 on loopback: nothing listens there.
    let lambda = start(Template::bundled().unwrap(), bindings(&redis, "redis://sluice:pw-secret@127.0.0.1:1"), 1).await;
    let error = failed_cold_start(&lambda, "sluice-fn-plan-batch", batch("m1").to_string()).await;
    assert!(error.error_message.contains("cannot connect to Redis (SLUICE_REDIS_URL)"), "{error}");
    assert!(error.error_message.contains("127.0.0.1:1: unreachable"), "{error}");
    assert!(!error.to_string().contains("pw-secret"), "{error}");
    // The next invocation starts a new environment, which fails the same way.
    let plan = lambda.function("sluice-fn-plan-batch").unwrap();
    let again = plan.invoke(batch("m2").to_string()).await.unwrap_err();
    assert_eq!((again.error_type.as_str(), plan.cold_starts()), ("Runtime.InitError", 2));
    lambda.stop().await;
}

/// A TLS Redis whose certificate the function cannot trust (it was told
/// of another CA): the cold start names the CA variable and the handshake,
/// never the password the function read from Secrets Manager.
#[tokio::test]
async fn a_redis_certificate_from_another_ca_fails_the_cold_start_naming_the_ca_variable() {
    let redis = TestRedis::tls("cold_start_tls");
    let password = redis.server().password().expect("a TLS test server has a password").to_owned();
    let url = redis.server().url_with_password();
    let other_ca = sluice_testkit::unrelated_ca();
    let endpoints = Endpoints {
        sqs: Some("http://127.0.0.1:1".into()),
        redis_ca_file: Some(other_ca.ca_file().display().to_string()),
        ..Endpoints::default()
    };
    let lambda = start(Template::bundled().unwrap(), bindings(&redis, &url).with_endpoints(endpoints), 1).await;
    let error = failed_cold_start(&lambda, "sluice-fn-plan-batch", batch("m1").to_string()).await;
    assert!(error.error_message.contains("SLUICE_REDIS_CA_FILE"), "{error}");
    assert!(error.error_message.contains("the TLS handshake failed"), "{error}");
    assert!(!error.to_string().contains(&password), "{error}");
    lambda.stop().await;
}

/// The drain function exists only when the stack is given a database
/// (its `Condition`); given one it cannot reach, its cold start fails with
/// one line naming the endpoint and the variable, never the password in
/// the URL it read from the (local) Secrets Manager.
#[tokio::test]
async fn a_database_that_cannot_be_reached_fails_the_drains_cold_start_naming_it_and_no_password() {
    let redis = TestRedis::new("cold_start_database");
    let without = start(Template::bundled().unwrap(), bindings(&redis, &redis.url()), 1).await;
    assert!(without.function("sluice-fn-drain").is_none(), "no database: no drain function");
    without.stop().await;
    // Port 1 on loopback: nothing listens there.
    let url = "postgres://sluice:pw-secret@127.0.0.1:1/app";
    let with_database = bindings(&redis, &redis.url()).secret("DatabaseUrlSecretArn", Secret::new(url));
    let lambda = start(Template::bundled().unwrap(), with_database, 1).await;
    let error = failed_cold_start(&lambda, "sluice-fn-drain", "{}".to_owned()).await;
    assert!(error.error_message.contains("cannot connect to postgresql at 127.0.0.1:1/app"), "{error}");
    assert!(error.error_message.contains("(SLUICE_DATABASE_URL_SECRET_ARN)"), "{error}");
    assert!(!error.to_string().contains("pw-secret"), "{error}");
    lambda.stop().await;
}

/// A template that forgets a variable: the step function and the ingest
/// function each name it.
#[tokio::test]
async fn a_missing_variable_fails_the_cold_start_naming_it() {
    let redis = TestRedis::new("cold_start_missing");
    let text = sluice_lambda_runtime::template::TEMPLATE
        .lines()
        .filter(|l| !l.contains("SLUICE_CAFE24_CLIENT_ID:") && !l.contains("SLUICE_QUEUE_URL:"))
        .collect::<Vec<_>>()
        .join("\n");
    let lambda = start(Template::parse(&text).unwrap(), bindings(&redis, &redis.url()), 1).await;
    let fetch = failed_cold_start(&lambda, "sluice-fn-fetch", "{}".to_owned()).await;
    assert!(fetch.error_message.contains("SLUICE_CAFE24_CLIENT_ID is not set"), "{fetch}");
    let ingest = failed_cold_start(&lambda, "sluice-fn-ingest", "{}".to_owned()).await;
    assert!(ingest.error_message.contains("SLUICE_QUEUE_URL is not set"), "{ingest}");
    lambda.stop().await;
}

/// A process that dies before it answers fails the invocation that
/// waited with `Runtime.ExitError`; the next invocation gets a new one.
#[tokio::test]
async fn a_process_that_dies_fails_its_invocation_and_is_replaced() {
    let redis = TestRedis::new("cold_start_killed");
    // A Redis that takes connections and never answers holds the cold
    // start in its connect (for the functions' 2 s Redis timeout).
    let stalled = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("redis://{}", stalled.local_addr().unwrap());
    let lambda = start(Template::bundled().unwrap(), bindings(&redis, &url), 1).await;
    let plan = lambda.function("sluice-fn-plan-batch").unwrap().clone();
    let invocation = tokio::spawn({
        let plan = plan.clone();
        async move { plan.invoke(batch("m1").to_string()).await }
    });
    let pid = tokio::time::timeout(INVOKE_TIMEOUT, async {
        loop {
            if let Some(pid) = children(std::process::id(), "sluice-fn-plan").first() {
                return *pid;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the environment's process started");
    let killed = std::process::Command::new("kill").args(["-9", &pid.to_string()]).status().unwrap();
    assert!(killed.success());
    let error = tokio::time::timeout(INVOKE_TIMEOUT, invocation).await.unwrap().unwrap().unwrap_err();
    assert_eq!(error.error_type, "Runtime.ExitError", "{error}");
    assert!(error.error_message.contains("during init") && error.error_message.contains("signal: 9"), "{error}");
    assert!(is_gone(pid));
    lambda.stop().await;
}
