//! The stack's drain to PostgreSQL: what the pipeline stores reaches
//! `sluice.snapshots`, each event's trace says when its row was written,
//! the streams are trimmed behind it; a database that stays down past
//! `alert_after` raises one alert, its recovery another, and nothing is
//! lost meanwhile; stopping the stack stops the drain.

use crate::support;

use sluice_dev_stack::DrainSetup;
use sluice_sink::DrainConfig;
use sluice_testkit::postgres::PostgresServer;
use sqlx::PgPool;
use std::time::{Duration, Instant};
use support::{PRODUCT, Setup, Stack, alert_receiver, product};

const LIMIT: Duration = Duration::from_secs(60);

/// Polls `check` until it holds; panics after [`LIMIT`].
async fn until<F: std::future::Future<Output = bool>>(what: &str, mut check: impl FnMut() -> F) {
    let deadline = Instant::now() + LIMIT;
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The product names in `sluice.snapshots`, by resource id; empty while
/// the database cannot answer.
async fn names(pool: &PgPool) -> Vec<(String, String)> {
    sqlx::query_as("SELECT resource_id, body->>'product_name' FROM sluice.snapshots ORDER BY resource_id")
        .fetch_all(pool)
        .await
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_stack_drains_into_postgresql_and_alerts_once_while_it_is_down() {
    let mut server = PostgresServer::start().await.unwrap();
    let (_, pool) = server.database("dev_drain").await.unwrap();
    let (alert_url, alerts) = alert_receiver().await;
    let drain = DrainSetup {
        pool: pool.clone(),
        endpoint: format!("127.0.0.1:{}/dev_drain", server.port()),
        config: DrainConfig {
            idle_poll: Duration::from_millis(50),
            max_backoff: Duration::from_millis(200),
            ..DrainConfig::default()
        },
        alert_after: Duration::from_millis(500),
    };
    let setup = Setup { drain: Some(drain), alert_url: Some(alert_url), ..Setup::new(&["mall-a"]) };
    let mut stack = Stack::start("dev_drain", setup).await;
    assert!(stack.url("PostgreSQL").ends_with("/dev_drain"), "the banner names the database");

    let mut changes = Vec::new();
    for i in 0..3 {
        changes.push(stack.sandbox.create("mall-a", PRODUCT, product(&format!("p{i}"))).await.unwrap());
    }
    stack.enqueue(&changes).await;
    until("the three products are rows", || async { names(&pool).await.len() == 3 }).await;
    let drain = stack.dev.drain.as_ref().expect("a drain");
    until("the drain has caught up", || async { drain.behind().await.unwrap() == 0 }).await;
    let bodies: Vec<(String, serde_json::Value)> =
        sqlx::query_as("SELECT resource_id, body FROM sluice.snapshots").fetch_all(&pool).await.unwrap();
    for (id, body) in bodies {
        let truth = stack.sandbox.resource("mall-a", PRODUCT, &id).unwrap().expect("in the sandbox");
        assert_eq!(body, truth.body, "the row is the sandbox's current state");
    }
    let event = &stack.sent()[0].event_id;
    let trace = stack.dev.shop.traces().read(event).await.unwrap();
    let written = trace.iter().find(|t| t.stage == "written").expect("the trace shows the drain");
    assert_eq!(written.detail["sink"], "postgresql");
    assert!(stack.stored().await.is_empty(), "what the database holds is trimmed from the streams");

    // Down past alert_after: one alert, and the snapshot waits in Redis.
    server.stop();
    let changed = stack.sandbox.update("mall-a", PRODUCT, &changes[0].id, product("p0 again")).await.unwrap();
    stack.enqueue(&[changed]).await;
    until("the outage is alerted", || async { !alerts.lock().unwrap().is_empty() }).await;
    let first = alerts.lock().unwrap()[0].clone();
    assert!(first.contains("drain to PostgreSQL at 127.0.0.1:") && first.contains("has failed"), "{first}");
    server.start_again().await.unwrap();
    until("the recovery is announced", || async { alerts.lock().unwrap().len() == 2 }).await;
    assert!(alerts.lock().unwrap()[1].contains("writes again"));
    until("the change is a row", || async { names(&pool).await.iter().any(|(_, name)| name == "p0 again") }).await;
    assert_eq!(alerts.lock().unwrap().len(), 2, "one alert per episode");
    tokio::time::timeout(LIMIT, stack.stop()).await.expect("the stack and its drain stop");
}
