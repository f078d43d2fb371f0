//! The real plan-batch binary under the local Runtime API: it answers, it
//! reports its handler's errors as Step Functions reads them, it gets
//! exactly the environment the template gives it, its environments are
//! reused and never more than the limit run at once, and none outlives
//! the service.

use crate::support;

use futures::future::join_all;
use serde_json::Value;
use sluice_lambda_runtime::Template;
use sluice_lambda_runtime::function_spec::lambda_variables;
use sluice_testkit::TestRedis;
use sluice_testkit::processes::is_gone;
use std::collections::BTreeSet;
use support::{INVOKE_TIMEOUT, batch, bindings, start};

#[tokio::test]
async fn a_function_answers_and_its_environments_are_reused_up_to_the_limit() {
    let redis = TestRedis::new("local_lambda_invoke");
    let lambda = start(Template::bundled().unwrap(), bindings(&redis, &redis.url()), 2).await;
    let plan = lambda.function("sluice-local-plan-batch").expect("plan-batch by name").clone();
    assert_eq!(plan.concurrency(), 2);

    let answers = tokio::time::timeout(
        INVOKE_TIMEOUT,
        join_all((0..6).map(|i| plan.invoke(batch(&format!("m{i}")).to_string()))),
    )
    .await
    .expect("six invocations in time");
    for answer in answers {
        let plan: Value = serde_json::from_slice(&answer.unwrap_or_else(|e| panic!("{e}"))).unwrap();
        assert_eq!((plan["max_concurrency"].as_u64(), plan["groups"].as_array().map(Vec::len)), (Some(10), Some(1)));
    }
    assert_eq!(plan.cold_starts(), 2, "two environments served six invocations");
    for i in 6..9 {
        plan.invoke(batch(&format!("m{i}")).to_string()).await.unwrap();
    }
    assert_eq!((plan.cold_starts(), plan.invocations()), (2, 9), "warm environments were reused");
    // The plan ran against the test's Redis, under its key prefix.
    assert!(!redis.keys().await.is_empty());

    // By ARN too, as the state machine names it; a handler error keeps its type.
    let arn = plan.spec().arn.clone();
    let error = lambda.invoke(&arn, r#"{"messages": [{"messageId": "m1"}]}"#).await.unwrap_err();
    assert_eq!(error.error_type, "Sluice.InvalidRequest", "{error}");
    assert!(error.error_message.contains("missing field `body`"), "{error}");
    assert!(error.log_tail.is_empty(), "a handler's error is its own report: {error}");
    assert_eq!(plan.cold_starts(), 2, "a handler error keeps the environment");

    let pids = plan.idle_pids();
    assert_eq!(pids.len(), 2);
    lambda.stop().await;
    for pid in pids {
        assert!(is_gone(pid), "process {pid} outlived the service");
    }
}

/// What the process sees is the template's variables for the function, the
/// endpoints it uses, and what Lambda sets: nothing of this process's own.
#[tokio::test]
async fn a_function_gets_exactly_the_templates_environment() {
    let redis = TestRedis::new("local_lambda_environ");
    let lambda = start(Template::bundled().unwrap(), bindings(&redis, &redis.url()), 1).await;
    let fetch = lambda.function("sluice-fn-plan-batch").unwrap().clone();
    fetch.invoke(batch("m1").to_string()).await.unwrap();
    let pid = fetch.idle_pids()[0];
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    let seen: BTreeSet<String> = environ
        .split(|b| *b == 0)
        .filter(|v| !v.is_empty())
        .map(|v| String::from_utf8_lossy(v).split_once('=').map(|(k, _)| k.to_owned()).unwrap_or_default())
        .collect();
    let spec = fetch.spec();
    let expected: BTreeSet<String> = spec
        .variables
        .iter()
        .map(|(k, _)| k.clone())
        .chain(lambda_variables(spec, "", "", "").into_iter().map(|(k, _)| k))
        .collect();
    assert_eq!(seen, expected);
    let template: BTreeSet<&str> = [
        "SLUICE_REDIS_URL",
        "SLUICE_REDIS_PASSWORD_SECRET_ARN",
        "SLUICE_REDIS_CLUSTER",
        "SLUICE_SECRET_TTL_SECS",
        "SLUICE_KEY_PREFIX",
        "SLUICE_STAGE",
        "SLUICE_MAP_MAX_CONCURRENCY",
    ]
    .into();
    let sluice: BTreeSet<&str> = seen.iter().map(String::as_str).filter(|k| k.starts_with("SLUICE_")).collect();
    assert_eq!(sluice, template, "plan-batch gets the Globals and its own variable");
    assert!(seen.contains("AWS_ENDPOINT_URL_SECRETS_MANAGER"), "it reads its Redis password from the secret");
    lambda.stop().await;
    assert!(is_gone(pid));
}
