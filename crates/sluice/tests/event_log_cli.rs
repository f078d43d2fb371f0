//! The event log through a real `sluice dev` and `sluice trace`: a shop
//! event dead-lettered (given up to the dead-letter queue) reaches
//! PostgreSQL's `sluice.events` and is traced from there once its Redis
//! trace is gone; a row written before the outcome's rename (`parked`) is
//! read as dead-lettered too.

use crate::support;

use serde_json::json;
use sluice_domain::{ResourceKind, ResourceRef, ShopEvent, Topic};
use sluice_redis::{Keyspace, Tag};
use sluice_testkit::postgres::TestPostgres;
use sqlx::PgPool;
use std::time::{Duration, Instant};
use support::Dev;

/// Every wait here ends well within this.
const LIMIT: Duration = Duration::from_secs(30);

/// Sends a webhook for a product of `mall` to `ingest`; its event id.
async fn webhook(ingest: &str, mall: &str, product: u64, trace_id: &str) -> String {
    let response = sluice_http::client()
        .post(ingest)
        .header("X-API-Key", "sluice-dev")
        .header("X-Trace-ID", trace_id)
        .json(&json!({"event_no": 90001, "resource": {"mall_id": mall, "product_no": product}}))
        .send()
        .await
        .expect("webhook");
    assert_eq!(response.status().as_u16(), 202, "{:?}", response.text().await);
    let resource = ResourceRef { kind: ResourceKind::Product, id: product.to_string() };
    ShopEvent::new(mall, Topic(90001), resource, trace_id).unwrap().dedup_id().as_str().to_owned()
}

/// Gives mall `tokenless`, which Cafe24 does not know, an expired token:
/// its refresh is refused (404), which no retry mends, so its events fail
/// into the dead-letter queue. (A mall with no token at all is parked
/// instead, waiting for a person: its events held until `sluice tokens set`.)
fn seed_unknown_mall(dev: &Dev) {
    let expired = json!({"access_token": "at", "expires_at": "2020-01-01T00:00:00.000",
        "refresh_token": "rt", "refresh_token_expires_at": "2099-01-01T00:00:00.000"});
    dev.set_tokens("tokenless", &expired);
}

/// Waits until `event` has a dead-lettered row in `pool`'s `sluice.events`
/// (`parked` in rows written before the outcome's rename).
async fn wait_dead_lettered(pool: &PgPool, event: &str) {
    let deadline = Instant::now() + LIMIT;
    loop {
        let dead: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM sluice.events WHERE event_id = $1 AND outcome IN ('dead-lettered', 'parked')",
        )
        .bind(event)
        .fetch_one(pool)
        .await
        .unwrap_or(0);
        if dead == 1 {
            return;
        }
        assert!(Instant::now() < deadline, "{event} not dead-lettered in sluice.events within {LIMIT:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Deletes `event`'s Redis trace in the Redis of the `sluice dev` run in
/// `dev`'s directory, as its 7-day expiry would.
async fn expire_trace(dev: &Dev, event: &str) {
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dev.workdir.join(".sluice/dev.json")).unwrap()).unwrap();
    let client = redis::Client::open(state["redis_url"].as_str().unwrap()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let key = Keyspace::new(state["key_prefix"].as_str().unwrap()).unwrap().key(&Tag::for_event(event), "trace", "");
    let deleted: i64 = redis::cmd("DEL").arg(&key).query_async(&mut conn).await.unwrap();
    assert_eq!(deleted, 1, "{key} held the trace");
}

#[tokio::test]
async fn a_dead_lettered_event_is_traced_from_postgresql_after_its_redis_trace_is_gone() {
    let pg = TestPostgres::new("dead_lettered_trace").await;
    // One receive: the first failure dead-letters the event.
    let mut dev = Dev::start(None, &["--sandbox-mall", "acme", "--max-receive-count", "1", "--database-url", &pg.url]);
    let ingest = dev.url("Ingest");
    seed_unknown_mall(&dev);
    let event = webhook(&ingest, "tokenless", 5, "dead-lettered-1").await;
    wait_dead_lettered(&pg.pool, &event).await;
    expire_trace(&dev, &event).await;

    let (code, output) = dev.trace_with_env(&event, &[("SLUICE_DATABASE_URL", &pg.url)]);
    assert_eq!(code, Some(0), "{output}");
    assert!(output.starts_with(&format!("{event} (from PostgreSQL")), "{output}");
    for stage in [" received ", " enqueued ", " failed ", " dead-lettered "] {
        assert!(output.contains(stage), "no{stage}stage:\n{output}");
    }
    assert!(output.contains("refreshing mall tokenless's token"), "the reason is kept:\n{output}");
    let now = "now: dead-lettered: in the dead-letter queue when last seen (sluice dlq show, sluice redrive)";
    assert!(output.trim_end().ends_with(now), "{output}");
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM sluice.snapshots").fetch_one(&pg.pool).await.unwrap();
    assert_eq!(rows, 0, "a dead-lettered event has no snapshot");

    // The same row as a drain before the outcome's rename wrote it: read
    // as dead-lettered all the same.
    let old =
        sqlx::query("UPDATE sluice.events SET outcome = 'parked' WHERE event_id = $1 AND outcome = 'dead-lettered'");
    assert_eq!(old.bind(&event).execute(&pg.pool).await.unwrap().rows_affected(), 1);
    let (code, output) = dev.trace_with_env(&event, &[("SLUICE_DATABASE_URL", &pg.url)]);
    assert_eq!(code, Some(0), "{output}");
    assert!(output.contains(" parked ") && output.trim_end().ends_with(now), "{output}");
    dev.signal("-INT");
    assert!(dev.wait(Duration::from_secs(15)).success());
}

/// A port nothing listens on: bound, then freed.
fn closed_port() -> String {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port().to_string()
}

/// Without SLUICE_DATABASE_URL, `sluice trace` looks where `sluice dev`
/// drains by default: the database `sluice` of the local PostgreSQL
/// (`PGPORT` moves it here to the test's server); none there is one line.
#[tokio::test]
async fn sluice_trace_reads_the_database_sluice_dev_drains_into_by_default() {
    let pg = TestPostgres::new("trace_default").await;
    let port = pg.port().to_string();
    let local = [("PGPORT", port.as_str())];
    let mut dev = Dev::start_with_env(None, &["--sandbox-mall", "acme", "--max-receive-count", "1"], &local);
    assert_eq!(dev.url("PostgreSQL"), format!("127.0.0.1:{port}/sluice"));
    let ingest = dev.url("Ingest");
    seed_unknown_mall(&dev);
    let event = webhook(&ingest, "tokenless", 6, "dead-lettered-2").await;
    let sluice_db = sluice_sink::connect(&format!("postgres://postgres@127.0.0.1:{port}/sluice")).await.unwrap();
    wait_dead_lettered(&sluice_db, &event).await;
    expire_trace(&dev, &event).await;

    let (code, output) = dev.trace(&event);
    assert_eq!(code, Some(0), "{output}");
    assert!(output.contains(" dead-lettered "), "{output}");

    let closed = closed_port();
    let (code, output) = dev.trace_with_env(&event, &[("PGPORT", &closed)]);
    assert_eq!(code, Some(1), "{output}");
    assert_eq!(
        output,
        format!(
            "no trace for {event}: unknown, or older than the trace retention (7 days by default); PostgreSQL not \
             searched: no PostgreSQL answers at 127.0.0.1:{closed} (SLUICE_DATABASE_URL names one)\n"
        )
    );
    dev.signal("-INT");
    assert!(dev.wait(Duration::from_secs(15)).success());
}
