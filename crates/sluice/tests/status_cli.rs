//! `sluice status` against a real Redis and an SQS endpoint (the embedded
//! queue's, over real HTTP): queue depths, the groups waiting longest by
//! name, and the malls and credentials found from the groups active lately.

use crate::support;

use sluice_aws::{SqsEndpoint, sqs_client};
use sluice_domain::{GroupAbout, Topic};
use sluice_redis::GroupLedger;
use sluice_testkit::TestRedis;
use std::process::{Command, Output};
use support::local_sqs::{LocalSqs, operator_command};

/// Runs `sluice` on `redis`'s keys, in a directory with no `sluice dev`.
fn sluice(redis: &TestRedis, args: &[&str]) -> Output {
    operator_command(redis, "status", args).output().unwrap()
}

fn about(about: &GroupAbout) -> String {
    serde_json::to_string(about).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_names_the_lagging_groups_and_their_malls_and_credentials() {
    let redis = TestRedis::new("cli_status");
    let ledger = GroupLedger::new(redis.conn().await, redis.keyspace());
    let shop = GroupAbout::Shop { mall_id: "acme".into(), topic: Topic(90001) };
    let sheet =
        GroupAbout::Sheet { credential_id: "ops@example.com".into(), spreadsheet_id: "doc".into(), sheet_gid: 3 };
    // The shop group's first event is the oldest; the sheet group's is done.
    ledger.enter("gs:acme:90001", &about(&shop), "e1").await.unwrap();
    ledger.enter("gs:acme:90001", &about(&shop), "e2").await.unwrap();
    ledger.enter("gr:ops@example.com:doc:3", &about(&sheet), "r1").await.unwrap();
    ledger.done("gr:ops@example.com:doc:3", "r1").await.unwrap();

    // An events queue with three messages waiting.
    let sqs = LocalSqs::start(&redis, "ev.fifo").await;
    let (endpoint, queue_url) = (sqs.endpoint.clone(), sqs.queue_url.clone());
    let client = sqs_client(&SqsEndpoint::Local(endpoint.clone())).await;
    for i in 0..3 {
        let send = client.send_message().queue_url(&queue_url).message_body("{}").message_group_id("g");
        send.message_deduplication_id(format!("d-{i}")).send().await.unwrap();
    }

    let out = sluice(&redis, &["status", "--queue-url", &queue_url, "--sqs-endpoint", &endpoint]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}{text}", String::from_utf8_lossy(&out.stderr));
    let events = text.lines().find(|l| l.trim_start().starts_with("events ")).unwrap_or_default();
    assert_eq!(events.split_whitespace().collect::<Vec<_>>(), ["events", "3", "0", "0"], "{text}");
    assert!(text.contains("Groups with events waiting: 1;"), "{text}");
    let lagging = text.lines().find(|l| l.ends_with("mall acme, topic 90001")).unwrap_or_else(|| panic!("{text}"));
    assert_eq!(lagging.split_whitespace().nth(2), Some("2"), "two pending: {lagging}");
    // Found from the groups: the mall's bucket, the credential's quotas.
    assert!(text.contains("  acme: bucket 0.0/40"), "{text}");
    assert!(text.contains("no token (sluice tokens set)"), "{text}");
    assert!(text.contains("  ops@example.com: usable; no token"), "{text}");
    assert!(text.contains("    writes 0/60 (project 0/300)"), "{text}");

    // Top 1 of one, and a named mall only.
    let out = sluice(&redis, &["status", "--top", "1", "--mall", "other"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("none known: pass --queue-url"), "{text}");
    assert!(text.contains("  other: bucket 0.0/40") && !text.contains("acme: bucket"), "{text}");
    assert!(text.contains("none active lately (name one with --credential)"), "{text}");

    // A limit the functions would refuse is refused here too.
    let mut bad_limit = Command::new(env!("CARGO_BIN_EXE_sluice"));
    bad_limit.args(["status"]).env("SLUICE_REDIS_URL", redis.url()).env("SLUICE_BUCKET_CAPACITY", "0");
    let bad_limit = bad_limit.output().unwrap();
    assert_eq!(bad_limit.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad_limit.stderr).contains("SLUICE_BUCKET_CAPACITY"), "{bad_limit:?}");

    let bad = sluice(&redis, &["status", "--top", "0"]);
    assert_eq!(bad.status.code(), Some(2), "{}", String::from_utf8_lossy(&bad.stderr));
    // No Redis named and no `sluice dev` here: a usage error that says so.
    let dir = std::env::temp_dir().join(format!("sluice-status-none-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let none = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .arg("status")
        .current_dir(&dir)
        .env_remove("SLUICE_REDIS_URL")
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(none.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&none.stderr).contains("set SLUICE_REDIS_URL"), "{none:?}");
    sqs.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_shows_what_waits_for_the_drain_to_postgresql() {
    let redis = TestRedis::new("cli_status_drain");
    // The shard count the functions use by default (SLUICE_SNAPSHOT_SHARDS).
    let store = sluice_redis::SnapshotStore::new(redis.conn().await, redis.keyspace(), 16).unwrap();
    for i in 0..3 {
        store.append("acme", &format!("k{i}"), &[("mall_id", "acme".to_owned())]).await.unwrap();
    }
    let out = sluice(&redis, &["status"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Drain to PostgreSQL (group sink): 3 not yet read, 0 read and not yet committed; oldest waiting"),
        "{text}"
    );
    // A drain consumer takes one and has not committed it yet.
    let worker = store.consumer("sink", "w1").unwrap();
    let shard = store.shard_of("acme");
    worker.ensure_group(shard).await.unwrap();
    assert_eq!(worker.new_entries(shard, 1).await.unwrap().len(), 1);
    let out = sluice(&redis, &["status"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("2 not yet read, 1 read and not yet committed"), "{text}");
    assert!(text.contains("  consumer w1: 1 pending"), "{text}");
}
