//! The crash test of acceptance (see `sluice_testkit::crash_scenario`) on
//! the Lambda's code path: the service `build` makes from the environment,
//! fed API Gateway HTTP API events the way `lambda_http` converts them. A
//! Lambda killed at its timeout, or whose sandbox dies, stops at an await
//! point exactly like this.

use crate::support;

use lambda_http::tower::ServiceExt;
use sluice_config::EnvSource;
use sluice_domain::queue::ReceiveRequest;
use sluice_domain::{Queue, WorkQueue};
use sluice_fn_ingest::{IngestSettings, build, ingest_config};
use sluice_ingest::Ingest;
use sluice_sqs_emulator::{EmbeddedQueue, MemoryBackend, QueueBackend, QueueConfig};
use sluice_testkit::TestRedis;
use sluice_testkit::crash_point::{CrashPlan, CrashingConnection};
use sluice_testkit::crash_scenario::{Answer, Front, every_crash_point, table};
use std::collections::HashMap;
use std::time::Duration;
use support::event;

const KEY: &str = "apigw-key-0123456789";
const QUEUE: &str = "sluice-events.fifo";

struct LambdaFront {
    ingest: Ingest<CrashingConnection<sluice_redis::Connection>>,
    queue: EmbeddedQueue<MemoryBackend>,
}

impl Front for LambdaFront {
    async fn post(&self, mall: &str, product_no: u64, trace: &str) -> Answer {
        let body = serde_json::json!({"event_no": 90002, "resource": {"mall_id": mall, "product_no": product_no}});
        let event = event(&body.to_string(), &[("x-api-key", KEY), ("x-trace-id", trace)], false);
        let request = lambda_http::request::from_str(&event.to_string()).unwrap();
        let response = self.ingest.router().oneshot(request).await.unwrap();
        let status = response.status().as_u16();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
        Answer { status, body: serde_json::from_slice(&bytes).unwrap() }
    }

    async fn drain(&self) -> Vec<String> {
        let mut ids = Vec::new();
        loop {
            let request = ReceiveRequest::new(10, Duration::from_secs(300), Duration::ZERO).unwrap();
            let batch = self.queue.receive(request).await.unwrap();
            if batch.is_empty() {
                return ids;
            }
            for message in batch {
                self.queue.delete(&message.receipt).await.unwrap();
                ids.push(message.dedup.as_str().to_owned());
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_crash_point_in_the_lambdas_acceptance_loses_a_webhook() {
    let redis = TestRedis::new("lambda_crash_points");
    redis.enrol(&["acme"], &[]).await;
    let vars: HashMap<&str, String> = HashMap::from([
        ("SLUICE_REDIS_URL", redis.url()),
        ("SLUICE_QUEUE_URL", format!("http://127.0.0.1:9324/000000000000/{QUEUE}")),
        ("SLUICE_API_KEYS", KEY.to_owned()),
        ("SLUICE_KEY_PREFIX", redis.keyspace().prefix().to_owned()),
        ("SLUICE_ACCEPT_LEASE_MS", "600".to_owned()),
    ]);
    let env = IngestSettings::from_source(&EnvSource::from_pairs(vars)).unwrap();
    let backend = MemoryBackend::new();
    backend.create_queue(QUEUE, &QueueConfig::default()).await.unwrap();
    let queue = EmbeddedQueue::new(backend, QUEUE);
    let plan = CrashPlan::new();
    let conn = CrashingConnection::new(redis.conn().await, plan.clone());
    let front =
        LambdaFront { ingest: build(ingest_config(&env).await.unwrap(), queue.clone(), conn, None).unwrap(), queue };
    let outcomes = every_crash_point(&front, &plan, &redis).await;
    println!("{}", table(&outcomes));
    assert!(outcomes.len() >= 10, "{} crash points", outcomes.len());
}
