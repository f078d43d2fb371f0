//! Acceptance killed at every await point between the first gate and the
//! enqueue, over real HTTP: no webhook answered 202 is lost, the later
//! webhooks for the same product are all answered by a fetch (or told to
//! retry), and the killed delivery's retry gets through within one lease
//! (see `sluice_testkit::crash_scenario`).

use crate::support;

use sluice_domain::Queue;
use sluice_testkit::TestRedis;
use sluice_testkit::crash_point::{CrashPlan, CrashingConnection};
use sluice_testkit::crash_scenario::{Answer, Front, every_crash_point, table};
use std::time::Duration;
use support::{Harness, connection, product};

struct HttpFront<'a>(&'a Harness<CrashingConnection<sluice_redis::Connection>>);

impl Front for HttpFront<'_> {
    async fn post(&self, mall: &str, product_no: u64, trace: &str) -> Answer {
        let (status, body) = self.0.send(&product(mall, product_no), Some(trace)).await;
        Answer { status: status.as_u16(), body }
    }

    async fn drain(&self) -> Vec<String> {
        self.0.drain().await.into_iter().map(|m| m.dedup.as_str().to_owned()).collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_crash_point_in_acceptance_loses_a_webhook() {
    let redis = TestRedis::new("crash_points");
    let plan = CrashPlan::new();
    let conn = CrashingConnection::new(connection(redis.settings()).await, plan.clone());
    // A short lease, so the killed delivery's retry waits little.
    let harness = Harness::start_on(redis.clone(), conn, |c| c.accept_lease = Duration::from_millis(600)).await;
    let outcomes = every_crash_point(&HttpFront(&harness), &plan, &redis).await;
    println!("{}", table(&outcomes));
    assert!(outcomes.len() >= 10, "{} crash points", outcomes.len());
    assert_eq!(harness.queue.inner.attributes().await.unwrap().in_flight, 0);
}
