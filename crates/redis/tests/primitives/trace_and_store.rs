//! Event traces, the snapshot store and the token store against a real
//! redis-server.

use redis::AsyncCommands;
use serde_json::json;
use sluice_redis::{SNAPSHOT_FIELD, SnapshotStore, StoredToken, Tag, TokenStore, Traces};
use sluice_testkit::TestRedis;
use std::time::Duration;

#[tokio::test]
async fn a_trace_keeps_every_stage_in_order_with_redis_time() {
    let redis = TestRedis::new("trace");
    let traces = Traces::new(redis.conn().await, redis.keyspace(), Duration::from_secs(3600));
    traces.record("s:acme:90002:product:7:t1", "received", &json!({"group": "gs:acme:90002"})).await.unwrap();
    traces.record("s:acme:90002:product:7:t1", "enqueued", &json!({"message_id": "m1"})).await.unwrap();
    traces.record_all(&["a".into(), "b".into()], "stored", &json!({"entry": "1-0"})).await.unwrap();
    let trace = traces.read("s:acme:90002:product:7:t1").await.unwrap();
    let stages: Vec<&str> = trace.iter().map(|e| e.stage.as_str()).collect();
    assert_eq!(stages, ["received", "enqueued"]);
    assert_eq!(trace[1].detail, json!({"message_id": "m1"}));
    assert!(trace[0].at_ms <= trace[1].at_ms && trace[0].at_ms > 1_700_000_000_000);
    assert_eq!(traces.read("b").await.unwrap()[0].stage, "stored");
    assert!(traces.read("unknown").await.unwrap().is_empty());
    let mut conn = redis.conn().await;
    for key in redis.keys().await {
        let ttl: i64 = conn.pttl(&key).await.unwrap();
        assert!(ttl > 3_500_000, "{key}: {ttl}");
    }
}

#[tokio::test]
async fn a_redelivered_snapshot_is_stored_once() {
    let redis = TestRedis::new("snapshots");
    let store = SnapshotStore::new(redis.conn().await, redis.keyspace(), 4).unwrap();
    let fields = [("mall", "acme".to_owned()), ("kind", "product".to_owned()), ("body", "{}".to_owned())];
    let first = store.append("acme", "event-1", &fields).await.unwrap();
    assert!(!first.duplicate);
    let again = store.append("acme", "event-1", &fields).await.unwrap();
    assert!(again.duplicate);
    assert_eq!(again.entry_id, first.entry_id);
    let other = store.append("acme", "event-2", &fields).await.unwrap();
    assert!(!other.duplicate);
    let mut conn = redis.conn().await;
    let len: usize = redis::cmd("XLEN").arg(store.stream_key(first.shard)).query_async(&mut conn).await.unwrap();
    assert_eq!(len, 2);
    // One mall, one shard: its snapshots stay in order.
    assert_eq!(store.shard_of("acme"), first.shard);
    let shards: std::collections::HashSet<u32> = (0..100).map(|i| store.shard_of(&format!("mall-{i}"))).collect();
    assert_eq!(shards.len(), 4, "100 malls over 4 shards should use every shard");
    assert!(SnapshotStore::new(redis.conn().await, redis.keyspace(), 0).is_err());
}

#[tokio::test]
async fn a_fetched_snapshot_is_stored_once_and_its_body_never_outlives_the_store() {
    let redis = TestRedis::new("fetched");
    let store = SnapshotStore::new(redis.conn().await, redis.keyspace(), 4).unwrap();
    let fields = |body: &str| {
        [("status", "found".to_owned()), ("event_ids", r#"["e1","e2"]"#.to_owned()), ("body", body.to_owned())]
    };
    let key = store.put_fetched("acme", "e1", &fields(r#"{"v":1}"#)).await.unwrap();
    assert_eq!(key, store.fetched_key("acme", "e1"));
    let mut conn = redis.conn().await;
    let ttl: i64 = conn.pttl(&key).await.unwrap();
    assert!(ttl > 14 * 60 * 1000 && ttl <= 15 * 60 * 1000, "{ttl}");

    let first = store.store_fetched("acme", &key, "e1").await.unwrap().expect("stored");
    assert!(!first.appended.duplicate);
    assert_eq!((first.event_ids.as_deref(), first.status.as_deref()), (Some(r#"["e1","e2"]"#), Some("found")));
    let entries = store.read(first.appended.shard, "-", 10).await.unwrap();
    assert_eq!((entries.len(), entries[0].fields["body"].as_str()), (1, r#"{"v":1}"#));
    let has_body: bool = conn.hexists(&key, "body").await.unwrap();
    assert!(!has_body, "the body is in the stream now");

    // A redelivery fetches again: a duplicate, whose body is dropped too.
    store.put_fetched("acme", "e1", &fields(r#"{"v":2}"#)).await.unwrap();
    let again = store.store_fetched("acme", &key, "e1").await.unwrap().expect("a duplicate");
    assert!(again.appended.duplicate && again.appended.entry_id == first.appended.entry_id);
    assert_eq!(again.event_ids.as_deref(), Some(r#"["e1","e2"]"#), "a retried store still learns its events");
    let has_body: bool = conn.hexists(&key, "body").await.unwrap();
    assert!(!has_body);
    assert_eq!(store.read(first.appended.shard, "-", 10).await.unwrap().len(), 1);

    // Nothing under the key, never stored: nothing to store.
    let gone = store.fetched_key("acme", "e3");
    assert_eq!(store.store_fetched("acme", &gone, "e3").await.unwrap(), None);
    // A key outside the mall's shard would make the script span slots: refused.
    let other = (0..).map(|i| format!("mall-{i}")).find(|m| store.shard_of(m) != store.shard_of("acme")).unwrap();
    let elsewhere = store.put_fetched(&other, "e4", &fields("{}")).await.unwrap();
    let err = store.store_fetched("acme", &elsewhere, "e4").await.unwrap_err();
    assert!(err.to_string().contains("shard"), "{err}");
}

#[tokio::test]
async fn a_fetched_snapshot_in_one_field_is_appended_as_that_field_alone() {
    let redis = TestRedis::new("fetched_one_field");
    let store = SnapshotStore::new(redis.conn().await, redis.keyspace(), 4).unwrap();
    let packed = r#"{"mall_id":"acme","kind":"product","id":"7","status":"found","event_ids":["e1"],"fetched_at_ms":5,"body":{"v":1}}"#;
    let fields = [
        ("event_ids", r#"["e1"]"#.to_owned()),
        ("status", "found".to_owned()),
        ("version", String::new()),
        (SNAPSHOT_FIELD, packed.to_owned()),
    ];
    let key = store.put_fetched("acme", "e1", &fields).await.unwrap();
    let stored = store.store_fetched("acme", &key, "e1").await.unwrap().expect("stored");
    assert_eq!((stored.event_ids.as_deref(), stored.status.as_deref()), (Some(r#"["e1"]"#), Some("found")));
    let entries = store.read(stored.appended.shard, "-", 10).await.unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].fields.len(), 1, "the reply's fields for the drain to parse: {:?}", entries[0].fields);
    assert_eq!(entries[0].snapshot().unwrap().body.get(), r#"{"v":1}"#);
    let mut conn = redis.conn().await;
    let left: Vec<String> = redis::cmd("HKEYS").arg(&key).query_async(&mut conn).await.unwrap();
    assert!(!left.contains(&SNAPSHOT_FIELD.to_owned()), "the snapshot is in the stream now: {left:?}");
    // Stored again (a lost reply): the same entry; then nothing to store.
    assert!(store.store_fetched("acme", &key, "e1").await.unwrap().unwrap().appended.duplicate);
    assert_eq!(store.store_fetched("acme", &key, "e1-other-key").await.unwrap(), None);
}

#[tokio::test]
async fn tokens_round_trip_expire_with_their_refresh_token_and_never_print() {
    let redis = TestRedis::new("tokens");
    let store = TokenStore::new(redis.conn().await, redis.keyspace());
    let tag = Tag::new("mall:acme");
    let now_ms = 1_763_000_000_000;
    let far = 4_000_000_000_000; // year 2096
    let token = StoredToken {
        access_token: "access-secret".into(),
        access_expires_ms: now_ms + 7_200_000,
        refresh_token: "refresh-secret".into(),
        refresh_expires_ms: far,
    };
    assert_eq!(store.get(&tag, "cafe24").await.unwrap(), None);
    store.put(&tag, "cafe24", &token, now_ms).await.unwrap();
    assert_eq!(store.get(&tag, "cafe24").await.unwrap(), Some(token.clone()));
    let mut conn = redis.conn().await;
    let expire_at: i64 = redis::cmd("PEXPIRETIME").arg(store.key(&tag, "cafe24")).query_async(&mut conn).await.unwrap();
    assert_eq!(expire_at, far as i64);
    let shown = format!("{token:?}");
    assert!(!shown.contains("secret"), "{shown}");
    let stale = StoredToken { refresh_expires_ms: now_ms - 1, ..token };
    assert!(store.put(&tag, "cafe24", &stale, now_ms).await.is_err());
}
