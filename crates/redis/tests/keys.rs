//! Every key the primitives write has a TTL, and all keys of one script call
//! share one cluster slot, checked on the keys actually written and on a
//! cluster-mode server.

use redis::AsyncCommands;
use sluice_redis::{
    Acquire, Begun, BucketSpec, Buckets, Coalescing, Deliveries, DeliveryTimes, DenyCache, Gates, GroupLedger, Limit,
    Locks, MarkTimes, SlidingWindowLimiter, SnapshotStore, StoredToken, Tag, TokenStore, Traces,
};
use sluice_testkit::{TestRedis, key_slot};
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Clone, Copy)]
enum Op {
    Limiter,
    BucketAcquire,
    BucketObserve,
    BucketPenalize,
    LockAcquire,
    LockExtend,
    GatePass,
    GatePending,
    GateJoin,
    Delivery,
    Trace,
    Snapshot,
    Fetched,
    Token,
    Groups,
}

const OPS: [Op; 15] = [
    Op::Limiter,
    Op::BucketAcquire,
    Op::BucketObserve,
    Op::BucketPenalize,
    Op::LockAcquire,
    Op::LockExtend,
    Op::GatePass,
    Op::GatePending,
    Op::GateJoin,
    Op::Delivery,
    Op::Trace,
    Op::Snapshot,
    Op::Fetched,
    Op::Token,
    Op::Groups,
];

/// Runs one primitive call the way production does, under one tag.
async fn exercise(redis: &TestRedis, op: Op) {
    let conn = redis.conn().await;
    let ks = redis.keyspace();
    let tag = Tag::new("project-7");
    let deny = Arc::new(DenyCache::new());
    match op {
        Op::Limiter => {
            let limiter = SlidingWindowLimiter::new(conn, ks, deny);
            let set = limiter
                .limits(
                    &tag,
                    &[
                        Limit::new("cred:a", 60, Duration::from_secs(60)),
                        Limit::new("project", 300, Duration::from_secs(60)),
                    ],
                )
                .unwrap();
            assert!(limiter.acquire(&set, 1).await.unwrap().is_admitted());
        }
        Op::BucketAcquire | Op::BucketObserve | Op::BucketPenalize => {
            let buckets = Buckets::new(conn, ks, deny);
            let bucket = buckets.bucket(&tag, "admin", BucketSpec::default()).unwrap();
            match op {
                Op::BucketAcquire => assert!(buckets.acquire(&bucket, 1).await.unwrap().is_admitted()),
                Op::BucketObserve => assert!(buckets.observe(&bucket, 20, 40).await.unwrap().units >= 20.0),
                _ => assert!(buckets.penalize(&bucket, Duration::from_secs(2)).await.unwrap().units > 39.0),
            }
        }
        Op::LockAcquire | Op::LockExtend => {
            let locks = Locks::new(conn, ks);
            let name = if matches!(op, Op::LockExtend) { "sheet-2" } else { "sheet-1" };
            let Acquire::Acquired(lease) = locks.acquire(&tag, name, Duration::from_secs(30)).await.unwrap() else {
                panic!("fresh lock busy");
            };
            if matches!(op, Op::LockExtend) {
                locks.extend(&lease, Duration::from_secs(60)).await.unwrap();
            }
        }
        Op::GatePass => {
            assert!(Gates::new(conn, ks).pass(&tag, "item", Duration::from_secs(30)).await.unwrap().passed());
        }
        Op::GatePending => {
            let gates = Gates::new(conn, ks);
            assert!(gates.mark_pending(&tag, "product:1", "ev-1", Duration::from_secs(900)).await.unwrap().passed());
        }
        Op::GateJoin => {
            let gates = Gates::new(conn, ks);
            let times = MarkTimes { lease: Duration::from_secs(30), pending: Duration::from_secs(900) };
            assert_eq!(gates.claim(&tag, "product:2", "ev-1", true, times).await.unwrap(), Coalescing::Owner);
            assert!(gates.confirm(&tag, "product:2", "ev-1", times.pending).await.unwrap());
            let joined = gates.claim(&tag, "product:2", "ev-2", true, times).await.unwrap();
            assert!(matches!(joined, Coalescing::Joined { .. }));
        }
        Op::Delivery => {
            let times = DeliveryTimes { lease: Duration::from_secs(30), window: Duration::from_secs(300) };
            let deliveries = Deliveries::new(conn, ks, times);
            let Begun::First(attempt) = deliveries.begin("ev-1").await.unwrap() else { panic!("first") };
            assert!(deliveries.release("ev-1", &attempt).await.unwrap());
            assert!(matches!(deliveries.begin("ev-1").await.unwrap(), Begun::Retry(_)));
            deliveries.settle("ev-1").await.unwrap();
        }
        Op::Trace => {
            let traces = Traces::new(conn, ks, Duration::from_secs(3600));
            traces.record("ev-1", "received", &serde_json::json!({})).await.unwrap();
        }
        Op::Snapshot => {
            let store = SnapshotStore::new(conn, ks, 8).unwrap();
            store.append("acme", "ev-1", &[("body", "{}".to_owned())]).await.unwrap();
        }
        Op::Fetched => {
            let store = SnapshotStore::new(conn, ks, 8).unwrap();
            let fields = [("status", "found".to_owned()), ("body", "{}".to_owned())];
            let key = store.put_fetched("acme", "ev-2", &fields).await.unwrap();
            assert!(!store.store_fetched("acme", &key, "ev-2").await.unwrap().unwrap().appended.duplicate);
        }
        Op::Token => {
            let token = StoredToken {
                access_token: "a".into(),
                access_expires_ms: 1,
                refresh_token: "r".into(),
                refresh_expires_ms: 4_000_000_000_000,
            };
            TokenStore::new(conn, ks).put(&tag, "cafe24", &token, 1_763_000_000_000).await.unwrap();
        }
        Op::Groups => {
            let ledger = GroupLedger::new(conn, ks);
            assert!(ledger.enter("gs:acme:1", "{}", "ev-1").await.unwrap());
            assert!(ledger.enter("gs:acme:1", "{}", "ev-2").await.unwrap());
            assert!(ledger.done("gs:acme:1", "ev-1").await.unwrap());
        }
    }
}

#[tokio::test]
async fn every_key_written_has_a_ttl() {
    let redis = TestRedis::new("ttl");
    for op in OPS {
        exercise(&redis, op).await;
    }
    let keys = redis.keys().await;
    // win (2), bkt, lock (2), fence (2), gate (3), delivery, joined, trace, stream,
    // seen (2), fetched, token, and the group ledger's pending, waiting,
    // seen, about, done: the ops above write 23 keys.
    assert_eq!(keys.len(), 23, "{keys:?}");
    let mut conn = redis.conn().await;
    for key in keys {
        let ttl: i64 = conn.pttl(&key).await.unwrap();
        // The snapshot stream's documented owner is the drain worker.
        if key.ends_with(":stream:") {
            assert_eq!(ttl, -1, "{key}");
            continue;
        }
        assert!(ttl > 0, "{key} has PTTL {ttl}");
    }
}

#[tokio::test]
async fn all_keys_of_one_call_hash_to_one_slot() {
    // Keeps the shared server up while each call gets a fresh prefix.
    let _server = TestRedis::new("slot_server");
    for op in OPS {
        let redis = TestRedis::new("slot");
        exercise(&redis, op).await;
        let keys = redis.keys().await;
        assert!(!keys.is_empty(), "{op:?} wrote nothing");
        let slots: Vec<u16> = keys.iter().map(|k| key_slot(k)).collect();
        assert!(slots.iter().all(|&s| s == slots[0]), "{op:?} wrote keys in several slots: {keys:?} -> {slots:?}");
    }
}

#[tokio::test]
async fn our_slot_function_agrees_with_redis() {
    let redis = TestRedis::cluster("keyslot");
    let mut conn = redis.conn().await;
    let ks = redis.keyspace();
    for scope in ["acme", "project-7", "a}b{c", "ü", ""] {
        let key = ks.key(&Tag::new(scope), "bkt", "admin");
        let theirs: u16 = redis::cmd("CLUSTER").arg("KEYSLOT").arg(&key).query_async(&mut conn).await.unwrap();
        assert_eq!(key_slot(&key), theirs, "{key}");
    }
}

#[tokio::test]
async fn every_script_runs_on_a_cluster_mode_server() {
    let redis = TestRedis::cluster("cluster_ops");
    for op in OPS {
        exercise(&redis, op).await;
    }
    // The check is live: a script call whose keys span two slots fails.
    let mut conn = redis.conn().await;
    let ks = redis.keyspace();
    let spanning: redis::RedisResult<i64> = redis::Script::new("return #KEYS")
        .key(ks.key(&Tag::new("a"), "x", "1"))
        .key(ks.key(&Tag::new("b"), "x", "1"))
        .invoke_async(&mut conn)
        .await;
    let err = spanning.unwrap_err();
    assert!(err.to_string().contains("don't hash to the same slot"), "{err}");
}
