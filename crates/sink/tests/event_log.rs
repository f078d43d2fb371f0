//! The event log against a real PostgreSQL and a real Redis: an event
//! dead-lettered (given up to the dead-letter queue) lands in
//! `sluice.events` with its journey (from the outcome entry the failure
//! step appends to the snapshot streams), with no snapshot row; an event
//! answered by two snapshots keeps both outcomes; a batch written again
//! records nothing twice, an outcome entry appended as `parked` before the
//! rename included; migration 0003 rekeys the rows an older drain wrote.

use crate::support;

use serde_json::json;
use sluice_redis::{StoredEntry, Traces};
use sluice_sink::{DrainConfig, SnapshotWriter};
use sluice_testkit::postgres::TestPostgres;
use sqlx::PgPool;
use std::time::Duration;
use support::{Rig, SHARDS, deadline};

async fn stages(pool: &PgPool, event: &str) -> Vec<String> {
    sluice_sink::outcomes(pool, event).await.unwrap().into_iter().map(|o| o.outcome).collect()
}

async fn event_rows(pool: &PgPool) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM sluice.events").fetch_one(pool).await.unwrap()
}

/// Every entry of every shard, oldest first (read before a drain trims them).
async fn entries(rig: &Rig) -> Vec<(String, Vec<StoredEntry>)> {
    let mut all = Vec::new();
    for shard in 0..SHARDS {
        all.push((rig.store.stream_key(shard), rig.store.read(shard, "-", 100).await.unwrap()));
    }
    all
}

#[tokio::test]
async fn a_dead_lettered_event_lands_in_the_event_log_after_its_journey_without_a_snapshot() {
    let pg = TestPostgres::new("dead_lettered").await;
    let rig = Rig::new("dead_lettered", pg.pool.clone()).await;
    let traces = Traces::new(rig.redis.conn().await, rig.redis.keyspace(), Duration::from_secs(60));
    let failed = json!({"error": "Sluice.CredentialRejected", "next": "dead-letter queue", "receive_count": 5});
    for stage in ["received", "enqueued", "dequeued"] {
        traces.record("ev-dead", stage, &json!({})).await.unwrap();
    }
    traces.record("ev-dead", "failed", &failed).await.unwrap();
    // The key's `parked:` prefix is the failure step's (a stored layout, kept).
    let first = rig.store.append_outcome("m1", "ev-dead", "dead-lettered", &failed, "parked:ev-dead:msg-1:5").await;
    let again = rig.store.append_outcome("m1", "ev-dead", "dead-lettered", &failed, "parked:ev-dead:msg-1:5").await;
    let (first, again) = (first.unwrap(), again.unwrap());
    assert!(again.duplicate && again.entry_id == first.entry_id, "the failure step run twice appends once");
    rig.append("m1", "1", 100, &["ev-stored"]).await;

    let drain = rig.drain("a", DrainConfig::default()).with_traces(traces.clone());
    let report = drain.until_empty(deadline()).await.unwrap();
    assert_eq!((report.taken, report.written, report.dead_lettered, report.acked), (2, 1, 1, 2));
    assert_eq!(rig.rows().await, 1, "a dead-lettered event has no snapshot row");
    assert_eq!(stages(&rig.pool, "ev-dead").await, ["received", "enqueued", "dequeued", "failed", "dead-lettered"]);
    let outcomes = sluice_sink::outcomes(&rig.pool, "ev-dead").await.unwrap();
    let dead = outcomes.last().unwrap();
    assert_eq!(dead.detail, failed, "the failure's detail is kept");
    let appended_ms: i64 = first.entry_id.split_once('-').unwrap().0.parse().unwrap();
    assert_eq!(dead.at_ms, appended_ms, "dead-lettered at the time Redis appended the outcome");
    assert_eq!(stages(&rig.pool, "ev-stored").await, ["written"]);
    assert_eq!(rig.stream_lengths().await, 0, "acknowledged and trimmed like a snapshot");
}

#[tokio::test]
async fn an_event_answered_by_two_snapshots_keeps_both_and_a_batch_written_again_adds_nothing() {
    let pg = TestPostgres::new("two_snapshots").await;
    let rig = Rig::new("two_snapshots", pg.pool.clone()).await;
    let traces = Traces::new(rig.redis.conn().await, rig.redis.keyspace(), Duration::from_secs(60));
    for stage in ["received", "enqueued", "stored", "stored"] {
        traces.record("ev-1", stage, &json!({})).await.unwrap();
    }
    // ev-1 answered by two products in two passes (its journey copied
    // twice); ev-2 by two products within one batch; ev-3 dead-lettered
    // before the outcome's rename (its entry says `parked`, as such entries
    // still in a stream at the deploy do).
    rig.append("m1", "1", 100, &["ev-1"]).await;
    let drain = rig.drain("a", DrainConfig::default()).with_traces(traces.clone());
    assert_eq!(drain.until_empty(deadline()).await.unwrap().written, 1);
    rig.append("m1", "2", 100, &["ev-1"]).await;
    rig.append("m1", "3", 100, &["ev-2"]).await;
    rig.append("m1", "4", 100, &["ev-2"]).await;
    rig.store.append_outcome("m1", "ev-3", "parked", &json!({}), "parked:ev-3").await.unwrap();
    let batch = entries(&rig).await;
    let report = drain.until_empty(deadline()).await.unwrap();
    assert_eq!((report.written, report.dead_lettered), (3, 1), "an old `parked` entry counts as dead-lettered");

    assert_eq!(stages(&rig.pool, "ev-1").await, ["received", "enqueued", "stored", "stored", "written", "written"]);
    let mut written: Vec<serde_json::Value> = (sluice_sink::outcomes(&rig.pool, "ev-2").await.unwrap().into_iter())
        .filter(|o| o.outcome == "written")
        .map(|o| o.detail["resource_id"].clone())
        .collect();
    written.sort_by_key(|id| id.to_string());
    assert_eq!(written, ["3", "4"], "both snapshots answering ev-2 are recorded");

    // The same entries written again (a drain that died before its
    // acknowledgement): recognised, and not one row more.
    let before = event_rows(&rig.pool).await;
    let writer = SnapshotWriter::new(rig.pool.clone());
    let journeys = ["ev-1", "ev-2", "ev-3"].map(|id| (id.to_owned(), Vec::new())).into_iter().collect();
    for (stream, entries) in &batch {
        let again = writer.write_with_journeys(stream, entries.clone(), &journeys).await.unwrap();
        assert!(again.written.is_empty() && again.superseded.is_empty(), "{again:?}");
    }
    assert_eq!(event_rows(&rig.pool).await, before);
    assert_eq!(stages(&rig.pool, "ev-3").await, ["parked"], "recorded as appended, once");
}

#[tokio::test]
async fn migration_0003_keys_an_older_drains_rows_by_their_source() {
    let pg = TestPostgres::new("migration_0003").await;
    sluice_sink::schema::migrator_through(2).run(&pg.pool).await.unwrap();
    sqlx::query(
        "INSERT INTO sluice.events (event_id, outcome, at, detail, position) VALUES
            ('ev-1', 'received', now(), '{}', 0),
            ('ev-1', 'written', now(), '{\"entry_id\": \"5-0\", \"mall_id\": \"m1\"}', 1)",
    )
    .execute(&pg.pool)
    .await
    .unwrap();
    sluice_sink::migrate(&pg.pool).await.unwrap();
    let rows: Vec<(String, String, i32)> =
        sqlx::query_as("SELECT outcome, entry_id, position FROM sluice.events ORDER BY position")
            .fetch_all(&pg.pool)
            .await
            .unwrap();
    assert_eq!(rows, [("received".into(), String::new(), 0), ("written".into(), "5-0".into(), i32::MAX)]);
}

#[tokio::test]
async fn a_written_outcome_reads_the_same_whether_recorded_before_migration_0005_or_after() {
    let pg = TestPostgres::new("migration_0005").await;
    sluice_sink::schema::migrator_through(4).run(&pg.pool).await.unwrap();
    // As the drain recorded it before: the snapshot named in `detail`.
    sqlx::query(
        "INSERT INTO sluice.events (event_id, outcome, entry_id, position, at, detail) VALUES
            ('ev-old', 'written', '5-0', 2147483647, now(),
             '{\"mall_id\": \"m1\", \"kind\": \"product\", \"resource_id\": \"7\", \"version\": 100, \"entry_id\": \"5-0\"}')",
    )
    .execute(&pg.pool)
    .await
    .unwrap();
    let rig = Rig::new("migration_0005", pg.pool.clone()).await;
    rig.append("m1", "7", 100, &["ev-new"]).await;
    assert_eq!(rig.drain("a", DrainConfig::default()).until_empty(deadline()).await.unwrap().written, 1);
    let stored_detail: serde_json::Value =
        sqlx::query_scalar("SELECT detail FROM sluice.events WHERE event_id = 'ev-new'")
            .fetch_one(&pg.pool)
            .await
            .unwrap();
    assert_eq!(stored_detail, json!({}), "the new row names its snapshot in columns");
    let old = sluice_sink::outcomes(&pg.pool, "ev-old").await.unwrap();
    let new = sluice_sink::outcomes(&pg.pool, "ev-new").await.unwrap();
    let entry_id = new[0].detail["entry_id"].clone();
    assert_eq!(
        old[0].detail,
        json!({"mall_id": "m1", "kind": "product", "resource_id": "7", "version": 100, "entry_id": "5-0"})
    );
    assert_eq!(
        new[0].detail,
        json!({"mall_id": "m1", "kind": "product", "resource_id": "7", "version": 100, "entry_id": entry_id})
    );
    assert!(entry_id.as_str().is_some_and(|id| id.contains('-')), "a stream entry id: {entry_id}");
}
