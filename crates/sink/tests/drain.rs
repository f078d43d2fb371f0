//! The drain against a real PostgreSQL and a real Redis: rows land, newer
//! wins, nothing is acknowledged that is not committed, streams are trimmed
//! only below what every group acknowledged, a dead consumer's entries are
//! claimed, and an outage loses nothing.

use crate::support;

use sluice_redis::Traces;
use sluice_sink::DrainConfig;
use sluice_testkit::postgres::{PostgresServer, TestPostgres};
use std::time::Duration;
use support::{LIMIT, Rig, SHARDS, deadline};

#[tokio::test]
async fn drained_snapshots_become_rows_with_their_events_and_leave_the_streams() {
    let pg = TestPostgres::new("drained_snapshots").await;
    let rig = Rig::new("drained_snapshots", pg.pool.clone()).await;
    for (mall, id) in [("m1", "1"), ("m1", "2"), ("m2", "1"), ("m3", "9")] {
        rig.append(mall, id, 100, &[&format!("ev-{mall}-{id}")]).await;
    }
    let traces = Traces::new(rig.redis.conn().await, rig.redis.keyspace(), Duration::from_secs(60));
    let drain = rig.drain("a", DrainConfig::default()).with_traces(traces.clone());
    let report = drain.until_empty(deadline()).await.unwrap();
    assert_eq!((report.taken, report.written, report.acked), (4, 4, 4));
    assert_eq!(rig.rows().await, 4);
    let body: serde_json::Value =
        sqlx::query_scalar("SELECT body FROM sluice.snapshots WHERE mall_id = 'm2' AND resource_id = '1'")
            .fetch_one(&rig.pool)
            .await
            .unwrap();
    assert_eq!(body, serde_json::json!({"product_no": "1", "v": 100}));
    let outcomes = sluice_sink::outcomes(&rig.pool, "ev-m3-9").await.unwrap();
    assert_eq!(outcomes.len(), 1);
    assert_eq!(outcomes[0].outcome, "written");
    assert_eq!(outcomes[0].detail["resource_id"], "9");
    assert!(sluice_sink::outcomes(&rig.pool, "never-seen").await.unwrap().is_empty());
    let trace = traces.read("ev-m1-2").await.unwrap();
    assert!(trace.iter().any(|t| t.stage == "written"), "the trace says it reached PostgreSQL: {trace:?}");
    assert_eq!(rig.stream_lengths().await, 0, "every group acknowledged everything: the streams are empty");
}

/// The event log keeps each event's journey, not only the drain's
/// outcome: the stages its Redis trace holds land in `sluice.events` in the
/// drain's transaction, at Redis's times, so `sluice trace` can tell the
/// whole story after the trace expires.
#[tokio::test]
async fn each_events_journey_lands_in_the_event_log_with_its_outcome() {
    let pg = TestPostgres::new("journeys").await;
    let rig = Rig::new("journeys", pg.pool.clone()).await;
    let traces = Traces::new(rig.redis.conn().await, rig.redis.keyspace(), Duration::from_secs(60));
    let detail = serde_json::json!({"note": "test"});
    for stage in ["received", "enqueued", "fetched", "stored"] {
        traces.record("ev-1", stage, &detail).await.unwrap();
    }
    traces.record("ev-2", "received", &detail).await.unwrap();
    traces.record("ev-2", "coalesced", &serde_json::json!({"into": "ev-1"})).await.unwrap();
    rig.append("m1", "7", 100, &["ev-1", "ev-2"]).await;

    let drain = rig.drain("a", DrainConfig::default()).with_traces(traces.clone());
    assert_eq!(drain.until_empty(deadline()).await.unwrap().written, 1);
    let stages = |id: &'static str| {
        let pool = rig.pool.clone();
        async move { sluice_sink::outcomes(&pool, id).await.unwrap().into_iter().map(|o| o.outcome).collect::<Vec<_>>() }
    };
    assert_eq!(stages("ev-1").await, ["received", "enqueued", "fetched", "stored", "written"]);
    assert_eq!(stages("ev-2").await, ["received", "coalesced", "written"]);
    let coalesced = sluice_sink::outcomes(&rig.pool, "ev-2").await.unwrap();
    assert_eq!(coalesced[1].detail["into"], "ev-1", "a stage keeps its trace's detail");
    let trace = traces.read("ev-1").await.unwrap();
    assert_eq!(coalesced[0].at_ms as u64 / 1000, trace[0].at_ms / 1000, "a stage keeps Redis's time");

    // A drain without traces records the outcome alone.
    let plain = Rig::new("journeys_plain", pg.pool.clone()).await;
    plain.append("m2", "8", 100, &["ev-3"]).await;
    plain.drain("a", DrainConfig::default()).until_empty(deadline()).await.unwrap();
    assert_eq!(stages("ev-3").await, ["written"]);
}

#[tokio::test]
async fn an_older_snapshot_never_replaces_a_newer_one() {
    let pg = TestPostgres::new("older_never_replaces").await;
    let rig = Rig::new("older_never_replaces", pg.pool.clone()).await;
    let drain = rig.drain("a", DrainConfig::default());
    rig.append("m1", "1", 200, &["new"]).await;
    drain.until_empty(deadline()).await.unwrap();
    // Reordered: an older fetch arrives after the newer one, and within one
    // batch an older and a newer snapshot of another resource.
    rig.append("m1", "1", 150, &["old"]).await;
    rig.append("m1", "2", 300, &["b-new"]).await;
    rig.append("m1", "2", 250, &["b-old"]).await;
    let report = drain.until_empty(deadline()).await.unwrap();
    assert_eq!((report.written, report.superseded), (1, 2));
    assert_eq!(rig.row_version("m1", "1").await, Some(200));
    assert_eq!(rig.row_version("m1", "2").await, Some(300));
    let superseded: Vec<String> =
        sqlx::query_scalar("SELECT event_id FROM sluice.events WHERE outcome = 'superseded' ORDER BY event_id")
            .fetch_all(&rig.pool)
            .await
            .unwrap();
    assert_eq!(superseded, ["b-old", "old"], "an answered event is recorded even when a newer row answers it");
    // Nothing superseded within the batch: its upsert commits alone, and
    // the row it did not write gets its outcome in a second transaction.
    rig.append("m1", "1", 100, &["older"]).await;
    rig.append("m1", "3", 100, &["c"]).await;
    let report = drain.until_empty(deadline()).await.unwrap();
    assert_eq!((report.written, report.superseded, report.acked), (1, 1, 2));
    assert_eq!((rig.row_version("m1", "1").await, rig.row_version("m1", "3").await), (Some(200), Some(100)));
    for (event, outcome) in [("older", "superseded"), ("c", "written")] {
        let outcomes = sluice_sink::outcomes(&rig.pool, event).await.unwrap();
        assert_eq!(outcomes.iter().map(|o| o.outcome.as_str()).collect::<Vec<_>>(), [outcome], "{event}");
    }
}

#[tokio::test]
async fn a_dead_consumers_entries_are_claimed_and_written_once() {
    let pg = TestPostgres::new("dead_consumer").await;
    let rig = Rig::new("dead_consumer", pg.pool.clone()).await;
    for id in 0..5 {
        rig.append("m1", &id.to_string(), 100, &[&format!("e{id}")]).await;
    }
    // Consumer "dead" takes the entries and never acknowledges them.
    let dead = rig.store.consumer("sink", "dead").unwrap();
    let shard = rig.store.shard_of("m1");
    dead.ensure_group(shard).await.unwrap();
    assert_eq!(dead.new_entries(shard, 100).await.unwrap().len(), 5);
    let live = rig.drain("live", DrainConfig { claim_idle: Duration::ZERO, ..DrainConfig::default() });
    let report = live.until_empty(deadline()).await.unwrap();
    assert_eq!((report.claimed, report.written), (5, 5));
    assert_eq!(live.consumer().lag(shard).await.unwrap().pending, 0);
    // Claimed again (the dead one's copy is gone): nothing is written twice.
    let written_at: Vec<String> =
        sqlx::query_scalar("SELECT written_at::text FROM sluice.snapshots ORDER BY resource_id")
            .fetch_all(&rig.pool)
            .await
            .unwrap();
    assert_eq!(live.until_empty(deadline()).await.unwrap().written, 0);
    let again: Vec<String> = sqlx::query_scalar("SELECT written_at::text FROM sluice.snapshots ORDER BY resource_id")
        .fetch_all(&rig.pool)
        .await
        .unwrap();
    assert_eq!(written_at, again);
}

#[tokio::test]
async fn entries_another_group_has_not_read_are_not_trimmed() {
    let pg = TestPostgres::new("other_group").await;
    let rig = Rig::new("other_group", pg.pool.clone()).await;
    let analytics = rig.store.consumer("analytics", "x").unwrap();
    for shard in 0..SHARDS {
        analytics.ensure_group(shard).await.unwrap();
    }
    for id in 0..4 {
        rig.append("m1", &id.to_string(), 100, &[&format!("e{id}")]).await;
    }
    let drain = rig.drain("a", DrainConfig::default());
    assert_eq!(drain.until_empty(deadline()).await.unwrap().written, 4);
    assert_eq!(rig.stream_lengths().await, 4, "the analytics group has read none of them");
    let shard = rig.store.shard_of("m1");
    let read = analytics.new_entries(shard, 2).await.unwrap();
    let ids: Vec<String> = read.iter().map(|e| e.id.clone()).collect();
    assert_eq!(drain.consumer().trim_acknowledged(shard).await.unwrap(), 0, "analytics still needs all four");
    assert_eq!(analytics.ack_and_trim(shard, &ids).await.unwrap(), (2, 2), "its two acknowledged, then trimmed");
    assert_eq!(rig.stream_lengths().await, 2);
    assert_eq!(analytics.ack_and_trim(shard, &ids).await.unwrap(), (0, 0), "acknowledged before: nothing pending");
}

#[tokio::test]
async fn entries_in_the_nine_fields_of_earlier_releases_drain_as_one_field_entries_do() {
    let pg = TestPostgres::new("nine_fields").await;
    let rig = Rig::new("nine_fields", pg.pool.clone()).await;
    // Left in a stream by the release before: an upgrade drains them too.
    rig.append_nine_fields("m1", "1", 100, &["old-1"]).await;
    rig.append_nine_fields("m1", "2", 300, &["old-2"]).await;
    rig.append("m1", "2", 200, &["new-2"]).await;
    rig.append("m1", "3", 100, &["new-3"]).await;
    let report = rig.drain("a", DrainConfig::default()).until_empty(deadline()).await.unwrap();
    assert_eq!((report.written, report.superseded, report.unreadable), (3, 1, 0));
    let rows: Vec<(String, i64, serde_json::Value, serde_json::Value)> =
        sqlx::query_as("SELECT resource_id, version, body, event_ids FROM sluice.snapshots ORDER BY resource_id")
            .fetch_all(&rig.pool)
            .await
            .unwrap();
    let expected = |id: &str, version: i64, event: &str| {
        (id.to_owned(), version, serde_json::json!({"product_no": id, "v": version}), serde_json::json!([event]))
    };
    assert_eq!(rows, [expected("1", 100, "old-1"), expected("2", 300, "old-2"), expected("3", 100, "new-3")]);
}

#[tokio::test]
async fn an_unreadable_entry_is_kept_and_does_not_block_the_stream() {
    let pg = TestPostgres::new("unreadable").await;
    let rig = Rig::new("unreadable", pg.pool.clone()).await;
    rig.store.append("m1", "bad", &[("mall_id", "m1".to_owned()), ("body", "{".to_owned())]).await.unwrap();
    rig.append("m1", "1", 100, &["good"]).await;
    let report = rig.drain("a", DrainConfig::default()).until_empty(deadline()).await.unwrap();
    assert_eq!((report.written, report.unreadable, report.acked), (1, 1, 2));
    let reason: String =
        sqlx::query_scalar("SELECT reason FROM sluice.unreadable_entries").fetch_one(&rig.pool).await.unwrap();
    assert!(reason.contains("status"), "{reason}");
}

#[tokio::test]
async fn a_body_postgresql_cannot_store_is_kept_as_unreadable_instead_of_holding_up_its_shard() {
    let pg = TestPostgres::new("nul_body").await;
    let rig = Rig::new("nul_body", pg.pool.clone()).await;
    // Valid JSON, but jsonb refuses \u0000: written with the batch, it
    // failed every transaction of its shard for good.
    let fields = [
        ("mall_id", "m1".to_owned()),
        ("kind", "product".to_owned()),
        ("id", "9".to_owned()),
        ("status", "found".to_owned()),
        ("event_ids", r#"["nul"]"#.to_owned()),
        ("fetched_at_ms", "100".to_owned()),
        ("body", r#"{"product_name":"a\u0000b"}"#.to_owned()),
    ];
    rig.store.append("m1", "nul", &fields).await.unwrap();
    // A NUL character itself, which no text column holds.
    let mut raw = fields.clone();
    raw[2].1 = "9\0".to_owned();
    raw[6].1 = "{}".to_owned();
    rig.store.append("m1", "raw nul", &raw).await.unwrap();
    rig.append("m1", "1", 100, &["good"]).await;
    let report = rig.drain("a", DrainConfig::default()).until_empty(deadline()).await.unwrap();
    assert_eq!((report.written, report.unreadable, report.acked), (1, 2, 3));
    let kept: String =
        sqlx::query_scalar("SELECT fields->>'id' FROM sluice.unreadable_entries WHERE reason LIKE '%NUL%'")
            .fetch_one(&rig.pool)
            .await
            .unwrap();
    assert_eq!(kept, "9\u{FFFD}", "the NUL shown as U+FFFD");
    let (reason, body): (String, String) =
        sqlx::query_as("SELECT reason, fields->>'body' FROM sluice.unreadable_entries")
            .fetch_one(&rig.pool)
            .await
            .unwrap();
    assert!(reason.contains("u0000"), "{reason}");
    assert_eq!(body, r#"{"product_name":"a\u0000b"}"#, "kept as it came");
}

#[tokio::test]
async fn two_drains_racing_on_the_same_resources_keep_the_newest_of_each() {
    let pg = TestPostgres::new("racing").await;
    let rig = Rig::new("racing", pg.pool.clone()).await;
    // 20 resources, each fetched 10 times, the versions shuffled.
    for round in 0..10i64 {
        for id in 0..20i64 {
            let version = 1000 + ((round * 7 + id * 3) % 10);
            rig.append(&format!("m{}", id % 4), &id.to_string(), version, &[&format!("e{id}-{round}")]).await;
        }
    }
    let small = DrainConfig { batch: 7, ..DrainConfig::default() };
    let (a, b) = (rig.drain("a", small.clone()), rig.drain("b", small));
    let (ra, rb) = tokio::join!(a.until_empty(deadline()), b.until_empty(deadline()));
    let (ra, rb) = (ra.expect("drain a"), rb.expect("drain b"));
    assert_eq!(ra.taken + rb.taken, 200, "each entry was taken by one of them");
    assert_eq!(rig.rows().await, 20);
    let versions: Vec<i64> =
        sqlx::query_scalar("SELECT version FROM sluice.snapshots").fetch_all(&rig.pool).await.unwrap();
    assert!(versions.iter().all(|v| *v == 1009), "the newest fetch of each resource won: {versions:?}");
    let events: i64 = sqlx::query_scalar("SELECT count(*) FROM sluice.events").fetch_one(&rig.pool).await.unwrap();
    assert_eq!(events, 200, "every event's outcome is recorded once");
}

#[tokio::test]
async fn a_database_outage_leaves_entries_pending_and_they_are_written_after_it() {
    let mut server = PostgresServer::start().await.unwrap();
    let (_, pool) = server.database("outage").await.unwrap();
    let rig = Rig::new("outage", pool).await;
    for id in 0..3 {
        rig.append("m1", &id.to_string(), 100, &[&format!("e{id}")]).await;
    }
    let drain = rig.drain("a", DrainConfig::default());
    server.stop();
    let shard = rig.store.shard_of("m1");
    let error = drain.pass(shard).await.expect_err("the database is down");
    assert!(error.to_string().starts_with("postgresql"), "{error}");
    let lag = drain.consumer().lag(shard).await.unwrap();
    assert_eq!(lag.pending, 3, "taken, not acknowledged: {lag:?}");
    server.start_again().await.unwrap();
    let report = tokio::time::timeout(LIMIT, async {
        loop {
            // The pool reconnects on its own; its first attempts may still fail.
            if let Ok(report) = drain.until_empty(deadline()).await {
                break report;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("drained after the restart");
    assert_eq!(report.written, 3);
    assert_eq!(rig.rows().await, 3);
    assert_eq!(drain.consumer().lag(shard).await.unwrap().pending, 0);
}

#[tokio::test]
async fn a_database_that_refuses_is_named_without_its_password() {
    // A port just freed: nothing listens there, the connection is refused.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("postgres://app:hunter2@127.0.0.1:{port}/nope");
    let error = sluice_sink::connect(&url).await.expect_err("nothing listens there").to_string();
    assert!(error.starts_with(&format!("cannot connect to postgresql at 127.0.0.1:{port}/nope")), "{error}");
    assert!(!error.contains("hunter2"), "{error}");
    let error = sluice_sink::connect("postgres://app:hunter2@127.0.0.1:notaport/db").await.unwrap_err().to_string();
    assert!(error.starts_with("the database URL is invalid"), "{error}");
    assert!(!error.contains("hunter2"), "{error}");
}
