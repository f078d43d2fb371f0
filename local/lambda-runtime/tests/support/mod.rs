//! The local Lambda service over a test's Redis: the template's bindings
//! as a test gives them, the function binaries built when stale, and the
//! service started from both.

use serde_json::{Value, json};
use sluice_domain::Secret;
use sluice_lambda_runtime::{Bindings, Endpoints, FunctionBinaries, LocalLambda, LocalLambdaConfig, Template};
use sluice_testkit::TestRedis;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Longest any test here waits for an invocation (a cold debug build
/// connecting to Redis takes well under a second).
pub(crate) const INVOKE_TIMEOUT: Duration = Duration::from_secs(30);

/// The template's references as a test binds them: `redis_url` for the
/// cache, the test's key prefix, placeholders for what these tests do not call.
pub(crate) fn bindings(redis: &TestRedis, redis_url: &str) -> Bindings {
    Bindings::new()
        .parameter("Stage", "local")
        .parameter("Cafe24ClientId", "app")
        .parameter("GoogleClientId", "google-app")
        .resource("EventsQueue", "http://127.0.0.1:1/000000000000/sluice-events.fifo")
        .resource("FlushQueue", "http://127.0.0.1:1/000000000000/sluice-flush")
        .resource("FlushQueue.Arn", "arn:aws:sqs:us-east-1:000000000000:sluice-flush")
        .resource("MallDrainQueue", "http://127.0.0.1:1/000000000000/sluice-mall-drain")
        .resource("MallDrainQueue.Arn", "arn:aws:sqs:us-east-1:000000000000:sluice-mall-drain")
        .secret("ApiKeys", Secret::new("test-key"))
        .secret("Cafe24ClientSecret", Secret::new("cafe24-secret"))
        .secret("GoogleClientSecret", Secret::new("google-secret"))
        .secret("AlertWebhookUrl", Secret::new(" "))
        .redis(redis_url)
        .replace("SLUICE_KEY_PREFIX", redis.keyspace().prefix())
        .with_endpoints(Endpoints { sqs: Some("http://127.0.0.1:1".into()), ..Endpoints::default() })
}

/// The service for `template` and `bindings`, at most `max` environments a function.
pub(crate) async fn start(template: Template, bindings: Bindings, max: usize) -> LocalLambda {
    let config = LocalLambdaConfig {
        template,
        bindings,
        binaries: FunctionBinaries::for_tests(&Template::bundled().unwrap().binaries()),
        max_concurrency: Some(max),
        throttle: false,
        log_dir: None,
    };
    LocalLambda::start(config, CancellationToken::new()).await.unwrap_or_else(|e| panic!("{e}"))
}

/// A pipe batch of one message that is not a work item, as plan-batch takes it.
pub(crate) fn batch(id: &str) -> Value {
    json!({"messages": [{
        "messageId": id,
        "receiptHandle": format!("rh-{id}"),
        "body": "not a work item",
        "attributes": {
            "ApproximateReceiveCount": "1",
            "MessageGroupId": "gs:a:90002",
            "MessageDeduplicationId": format!("dd-{id}"),
            "SentTimestamp": "1773120600000"
        }
    }]})
}
