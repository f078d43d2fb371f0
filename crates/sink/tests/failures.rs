//! The drain when things go wrong, against a real PostgreSQL: a batch
//! committed but not acknowledged (redelivered), drains claiming each
//! other's entries, a deadlock with another client, a statement timeout,
//! and a database restart while the drain runs. In every case each event
//! ends with one outcome, the newest snapshot wins, and nothing is
//! acknowledged that is not committed.

use crate::support;

use sluice_redis::{Connection, Traces};
use sluice_sink::{Drain, DrainConfig, SnapshotWriter};
use sluice_testkit::postgres::{PostgresServer, TestPostgres};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection as _, PgPool};
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{LIMIT, Rig, deadline};
use tokio_util::sync::CancellationToken;

/// A pool on `url` whose sessions carry `settings`.
async fn pool_with(url: &str, settings: &[(&str, &str)]) -> PgPool {
    let options = PgConnectOptions::from_str(url).unwrap().options(settings.iter().copied());
    PgPoolOptions::new().max_connections(4).connect_with(options).await.unwrap()
}

async fn outcomes(pool: &PgPool) -> Vec<(String, String)> {
    sqlx::query_as("SELECT event_id, outcome FROM sluice.events ORDER BY event_id, outcome")
        .fetch_all(pool)
        .await
        .unwrap()
}

/// Another client, in a transaction (its `settings` applied) that holds
/// the row of product `id` locked until it commits.
async fn hold_row(url: &str, id: &str, settings: &[&str]) -> sqlx::PgConnection {
    let mut other = sqlx::PgConnection::connect(url).await.unwrap();
    sqlx::query("BEGIN").execute(&mut other).await.unwrap();
    for setting in settings {
        sqlx::query(sqlx::AssertSqlSafe(format!("SET LOCAL {setting}"))).execute(&mut other).await.unwrap();
    }
    sqlx::query("SELECT 1 FROM sluice.snapshots WHERE resource_id = $1 FOR UPDATE")
        .bind(id)
        .execute(&mut other)
        .await
        .unwrap();
    other
}

/// Rows in `sluice.snapshots`; 0 while the database cannot answer.
async fn rows_now(pool: &PgPool) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM sluice.snapshots").fetch_one(pool).await.unwrap_or(0)
}

/// Polls `check` until it holds; panics after [`LIMIT`].
async fn until<F: std::future::Future<Output = bool>>(what: &str, mut check: impl FnMut() -> F) {
    let deadline = Instant::now() + LIMIT;
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn a_batch_committed_but_not_acknowledged_is_redelivered_without_a_second_outcome() {
    let pg = TestPostgres::new("redelivered").await;
    let rig = Rig::new("redelivered", pg.pool.clone()).await;
    rig.append("m1", "1", 100, &["e1"]).await;
    rig.append("m1", "2", 100, &["e2"]).await;
    // Consumer "a" writes the batch and dies before acknowledging it.
    let shard = rig.store.shard_of("m1");
    let dead = rig.store.consumer("sink", "a").unwrap();
    dead.ensure_group(shard).await.unwrap();
    let entries = dead.new_entries(shard, 10).await.unwrap();
    let stream = dead.stream_key(shard).unwrap().to_owned();
    let first = SnapshotWriter::new(rig.pool.clone()).write(&stream, entries.clone()).await.unwrap();
    assert_eq!(first.written.len(), 2);
    // Meanwhile product 2 changes and another consumer writes the change.
    rig.append("m1", "2", 200, &["e3"]).await;
    assert_eq!(rig.drain("b", DrainConfig::default()).pass(shard).await.unwrap().written, 1);

    // "a" restarts: its own pending entries come back.
    let traces = Traces::new(rig.redis.conn().await, rig.redis.keyspace(), Duration::from_secs(60));
    let again = rig.drain("a", DrainConfig::default()).with_traces(traces.clone());
    let report = again.pass(shard).await.unwrap();
    assert_eq!(
        (report.taken, report.written, report.superseded, report.redelivered, report.acked),
        (2, 0, 0, 2, 2),
        "a redelivery is neither written nor superseded: {report:?}"
    );
    assert_eq!(
        outcomes(&rig.pool).await,
        [("e1".into(), "written".into()), ("e2".into(), "written".into()), ("e3".into(), "written".into())],
        "each event keeps the one outcome its first delivery committed"
    );
    assert_eq!(rig.row_version("m1", "2").await, Some(200));
    assert_eq!(again.consumer().lag(shard).await.unwrap().pending, 0);
    // The first delivery died before tracing; the redelivery says what it committed.
    let trace = traces.read("e2").await.unwrap();
    assert_eq!(trace.iter().map(|t| t.stage.as_str()).collect::<Vec<_>>(), ["written"]);
}

#[tokio::test]
async fn an_entry_written_again_after_a_person_deleted_its_row_is_written_without_a_second_outcome() {
    let pg = TestPostgres::new("row_deleted").await;
    let rig = Rig::new("row_deleted", pg.pool.clone()).await;
    rig.append("m1", "1", 100, &["e1"]).await;
    rig.append("m1", "2", 100, &["e2"]).await;
    let shard = rig.store.shard_of("m1");
    let consumer = rig.store.consumer("sink", "a").unwrap();
    consumer.ensure_group(shard).await.unwrap();
    let entries = consumer.new_entries(shard, 10).await.unwrap();
    let stream = consumer.stream_key(shard).unwrap().to_owned();
    let writer = SnapshotWriter::new(rig.pool.clone());
    assert_eq!(writer.write(&stream, entries.clone()).await.unwrap().written.len(), 2);
    // A person clears product 1's row; the same entries come again (the
    // drain died before acknowledging them). Product 1's entry is written
    // again, although its event's `written` outcome is already recorded:
    // the fast way meets that row, the batch is written again the careful way.
    sqlx::query("DELETE FROM sluice.snapshots WHERE resource_id = '1'").execute(&rig.pool).await.unwrap();
    let again = writer.write(&stream, entries.clone()).await.unwrap();
    let written: Vec<&str> = again.written.iter().map(|r| r.resource_id.as_str()).collect();
    let redelivered: Vec<&str> = again.redelivered.iter().map(|(r, _)| r.resource_id.as_str()).collect();
    assert_eq!((written, redelivered), (vec!["1"], vec!["2"]), "{again:?}");
    assert_eq!(rig.row_version("m1", "1").await, Some(100), "the row is back");
    assert_eq!(
        outcomes(&rig.pool).await,
        [("e1".into(), "written".into()), ("e2".into(), "written".into())],
        "one outcome per event, as before"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drains_claiming_each_others_entries_record_every_event_once() {
    let pg = TestPostgres::new("claiming").await;
    let rig = Rig::new("claiming", pg.pool.clone()).await;
    // 12 resources of one mall (one shard), each fetched 8 times, the
    // versions shuffled; every event distinct.
    for round in 0..8i64 {
        for id in 0..12i64 {
            let version = 1000 + (round * 5 + id * 3) % 8;
            rig.append("m1", &id.to_string(), version, &[&format!("e{id}-{round}")]).await;
        }
    }
    // Claiming at once: each drain takes over what the other holds, even
    // while the other is still writing it.
    let eager = DrainConfig { batch: 5, claim_idle: Duration::ZERO, ..DrainConfig::default() };
    let (a, b) = (rig.drain("a", eager.clone()), rig.drain("b", eager));
    let (ra, rb) = tokio::join!(a.until_empty(deadline()), b.until_empty(deadline()));
    let (ra, rb) = (ra.expect("drain a"), rb.expect("drain b"));
    assert!(ra.taken + rb.taken >= 96, "every entry was taken: {ra:?} {rb:?}");
    let versions: Vec<i64> =
        sqlx::query_scalar("SELECT version FROM sluice.snapshots").fetch_all(&rig.pool).await.unwrap();
    assert_eq!(versions.len(), 12);
    assert!(versions.iter().all(|v| *v == 1007), "the newest fetch of each resource won: {versions:?}");
    let recorded = outcomes(&rig.pool).await;
    let mut events: Vec<&str> = recorded.iter().map(|(event, _)| event.as_str()).collect();
    events.dedup();
    assert_eq!((recorded.len(), events.len()), (96, 96), "every event has exactly one outcome");
    let shard = rig.store.shard_of("m1");
    assert_eq!(a.consumer().lag(shard).await.unwrap().pending, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadlock_with_another_client_is_retried_and_never_surfaces() {
    let pg = TestPostgres::new("deadlock").await;
    let rig = Rig::new("deadlock", pg.pool.clone()).await;
    rig.append("m1", "1", 100, &["a1"]).await;
    rig.append("m1", "2", 100, &["a2"]).await;
    rig.drain("d", DrainConfig::default()).until_empty(deadline()).await.unwrap();
    rig.append("m1", "1", 200, &["b1"]).await;
    rig.append("m1", "2", 200, &["b2"]).await;

    // Another client holds row 2, waiting long before it checks for a
    // deadlock, so the drain (1 s, PostgreSQL's default) is the one
    // PostgreSQL rolls back.
    let mut other = hold_row(&pg.url, "2", &["deadlock_timeout = '60s'"]).await;
    // The drain locks row 1 (keys in order) and waits for row 2.
    let drain = Arc::new(rig.drain("d", DrainConfig::default()));
    let shard = rig.store.shard_of("m1");
    let pass = tokio::spawn({
        let drain = drain.clone();
        async move { drain.pass(shard).await }
    });
    until("the drain waits for row 2", || async {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%sluice.snapshots%'",
        )
        .fetch_one(&rig.pool)
        .await
        .unwrap();
        waiting > 0
    })
    .await;
    // Now the other client wants row 1: a cycle; the drain's transaction
    // is rolled back, the other client gets row 1 and finishes.
    sqlx::query("UPDATE sluice.snapshots SET written_at = now() WHERE resource_id = '1'")
        .execute(&mut other)
        .await
        .unwrap();
    sqlx::query("COMMIT").execute(&mut other).await.unwrap();
    let report = tokio::time::timeout(LIMIT, pass).await.expect("the pass ends").unwrap();
    let report = report.expect("the deadlock was retried inside the pass, not reported");
    assert_eq!((report.written, report.acked), (2, 2));
    assert_eq!((rig.row_version("m1", "1").await, rig.row_version("m1", "2").await), (Some(200), Some(200)));
}

#[tokio::test]
async fn a_statement_timeout_leaves_the_batch_pending_until_it_is_written() {
    let pg = TestPostgres::new("statement_timeout").await;
    let rig = Rig::new("statement_timeout", pg.pool.clone()).await;
    rig.append("m1", "1", 100, &["a1"]).await;
    rig.drain("d", DrainConfig::default()).until_empty(deadline()).await.unwrap();
    rig.append("m1", "1", 200, &["b1"]).await;
    rig.append("m1", "2", 200, &["b2"]).await;
    // A client holds row 1 longer than the drain's statements may take.
    let mut other = hold_row(&pg.url, "1", &[]).await;
    let impatient = pool_with(&pg.url, &[("statement_timeout", "200ms")]).await;
    let consumer = rig.store.consumer("sink", "d").unwrap();
    let drain = Drain::new(consumer, SnapshotWriter::new(impatient), DrainConfig::default());
    let shard = rig.store.shard_of("m1");
    let error = drain.pass(shard).await.expect_err("the upsert waits past the timeout");
    assert!(error.to_string().contains("statement timeout"), "{error}");
    assert_eq!(drain.consumer().lag(shard).await.unwrap().pending, 2, "taken, not acknowledged");
    assert_eq!(rig.row_version("m1", "2").await, None, "nothing of the batch committed");
    sqlx::query("COMMIT").execute(&mut other).await.unwrap();
    let report = drain.until_empty(deadline()).await.unwrap();
    assert_eq!((report.written, report.acked), (2, 2));
    assert_eq!((rig.row_version("m1", "1").await, rig.row_version("m1", "2").await), (Some(200), Some(200)));
    assert_eq!(drain.consumer().lag(shard).await.unwrap().pending, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_restart_while_the_drain_runs_loses_nothing() {
    let mut server = PostgresServer::start().await.unwrap();
    let (_, pool) = server.database("restart").await.unwrap();
    let rig = Rig::new("restart", pool).await;
    let config = DrainConfig {
        batch: 5,
        idle_poll: Duration::from_millis(20),
        max_backoff: Duration::from_millis(200),
        ..DrainConfig::default()
    };
    let drain: Arc<Drain<Connection>> = Arc::new(rig.drain("d", config));
    let cancel = CancellationToken::new();
    let running = tokio::spawn({
        let (drain, cancel) = (drain.clone(), cancel.clone());
        async move { drain.run(cancel).await }
    });
    for i in 0..60 {
        rig.append(&format!("m{}", i % 3), &i.to_string(), 100, &[&format!("e{i}")]).await;
    }
    until("the drain has written some", || async { rows_now(&rig.pool).await > 0 }).await;
    // Stopped mid-stream: batches in hand fail, entries stay pending.
    server.stop();
    for i in 60..120 {
        rig.append(&format!("m{}", i % 3), &i.to_string(), 100, &[&format!("e{i}")]).await;
    }
    until("the drain reports failing", || async { drain.health().failing().is_some() }).await;
    server.start_again().await.unwrap();
    until("every snapshot is a row", || async { rows_now(&rig.pool).await == 120 }).await;
    until("nothing is pending", || async {
        let mut pending = 0;
        for shard in 0..support::SHARDS {
            pending += drain.consumer().lag(shard).await.unwrap().pending;
        }
        pending == 0
    })
    .await;
    cancel.cancel();
    tokio::time::timeout(LIMIT, running).await.expect("the drain stops when cancelled").unwrap();
    assert!(drain.health().failing().is_none(), "recovered");
    let recorded = outcomes(&rig.pool).await;
    assert_eq!(recorded.len(), 120, "one outcome per event, none twice");
    assert!(recorded.iter().all(|(_, outcome)| outcome == "written"));
}
