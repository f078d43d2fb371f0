//! Every key the primitives write has a TTL (or a documented owner), all
//! keys of one call share one cluster slot, checked on the keys actually
//! written, and every primitive, scripts and multi-key calls alike, runs
//! on a cluster of three masters (where a call spanning slots fails with
//! CROSSSLOT) and on a TLS server with an ACL user, through
//! `sluice_redis::connect`.

use redis::AsyncCommands;
use sluice_redis::{
    Acquire, Admit, Backlogs, Begun, BucketSpec, Buckets, Buffered, Chain, ChainNext, Claim, Coalescing,
    CredentialState, Deliveries, DeliveryTimes, DenyCache, FlowControl, Gates, GroupLedger, Limit, Locks, MarkTimes,
    RowAdmit, SheetBuffers, SheetFlow, SheetState, SlidingWindowLimiter, SnapshotStore, StoredToken, Tag, TokenStore,
    Traces,
};
use sluice_testkit::{CLUSTER_MASTERS, ServerKind, TestRedis, key_slot};
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
    Backlog,
    // The reads and the calls whose keys have owners instead of TTLs.
    Reads,
    Credential,
    SheetBuffer,
    SheetState,
}

const OPS: [Op; 16] = [
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
    Op::Backlog,
];

/// The ops whose keys have owners (the sheet's flush, `sluice credentials`)
/// rather than TTLs, and the reads.
const OWNED_OPS: [Op; 4] = [Op::Reads, Op::Credential, Op::SheetBuffer, Op::SheetState];

/// Runs one primitive call the way production does, under one tag (a tag
/// per op, so on a cluster the ops' keys spread over the masters).
async fn exercise(redis: &TestRedis, op: Op) {
    let conn = redis.conn().await;
    let ks = redis.keyspace();
    let tag = Tag::new(&format!("project-{op:?}"));
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
                // 30 units: the key lives until the bucket has leaked them
                // (15 s); one unit's 0.5 s could lapse before the keys are
                // listed on a slow cluster.
                Op::BucketAcquire => assert!(buckets.acquire(&bucket, 30).await.unwrap().is_admitted()),
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
        Op::Backlog => {
            let flow = FlowControl { max_queued: 1, ..FlowControl::default() };
            let backlogs = Backlogs::new(conn, ks, flow).unwrap();
            let times = MarkTimes { lease: Duration::from_secs(30), pending: Duration::from_secs(900) };
            assert!(matches!(backlogs.admit(&tag, "products:0", "ev-0", true, times).await.unwrap(), Admit::Claim(_)));
            let admit = backlogs.admit(&tag, "products:1", "ev-1", true, times).await.unwrap();
            assert!(matches!(admit, Admit::Deferred { chain: Chain::Took, .. }), "{admit:?}");
            assert!(backlogs.confirm_chain(&tag, "ev-1").await.unwrap());
            backlogs.admit(&tag, "products:2", "ev-2", true, times).await.unwrap();
            let read = backlogs.peek(&tag, 1).await.unwrap();
            assert_eq!(backlogs.done(&tag, &read).await.unwrap(), 1);
            assert_eq!(backlogs.next(&tag, "ev-1", Duration::from_secs(30)).await.unwrap(), ChainNext::Continue);
            assert_eq!(backlogs.size(&tag).await.unwrap().dirty, 1);
        }
        Op::Reads => reads(conn, ks, &tag).await,
        Op::Credential => {
            let state = CredentialState::new(conn.clone(), ks.clone());
            state.add_sheet("cred-1", "sheet-a").await.unwrap();
            assert_eq!(state.sheets("cred-1").await.unwrap(), ["sheet-a"]);
            // The rejection reads the credential's token: both in one slot.
            let token = StoredToken {
                access_token: "a".into(),
                access_expires_ms: 1,
                refresh_token: "r".into(),
                refresh_expires_ms: 4_000_000_000_000,
            };
            let (tag, name) = (Tag::for_credential("cred-1"), sluice_redis::credential_state::GOOGLE_TOKEN);
            TokenStore::new(conn, ks).put(&tag, name, &token, 1_763_000_000_000).await.unwrap();
            assert!(state.reject("cred-1", "invalid_grant", Some("r")).await.unwrap());
            assert_eq!(state.rejected("cred-1").await.unwrap().as_deref(), Some("invalid_grant"));
            state.accept("cred-1").await.unwrap();
            assert!(state.reject("cred-1", "kept for the key checks", Some("r")).await.unwrap());
        }
        Op::SheetBuffer => {
            let flow = SheetFlow { max_queued: 1, ..SheetFlow::default() };
            let buffers = SheetBuffers::new(conn, ks).with_flow(flow).unwrap();
            let added = |b: Buffered| (b.added, b.buffer_len);
            // Flow control's keys: one row counted, the next held, both
            // buffered by the first one's buffer step.
            assert_eq!(buffers.admit(&tag, "row-1", "[1]").await.unwrap(), RowAdmit::Send { moved: vec![] });
            assert_eq!(buffers.admit(&tag, "row-2", "[2]").await.unwrap(), RowAdmit::Overflowed { overflow_len: 1 });
            let first = buffers.buffer(&tag, "row-1", "[1]").await.unwrap();
            assert_eq!(first.moved, ["[2]"]);
            assert_eq!(added(first), (true, 2));
            assert_eq!(added(buffers.buffer(&tag, "row-2", "[2]").await.unwrap()), (false, 2));
            buffers.left(&tag, "row-1").await.unwrap();
            assert!(matches!(buffers.claim(&tag, 1, 1 << 20).await.unwrap(), Claim::Fresh(rows) if rows == ["[1]"]));
            buffers.mark_unsent(&tag).await.unwrap();
            assert_eq!(buffers.park(&tag).await.unwrap(), 1);
            assert_eq!(buffers.redrive(&tag).await.unwrap(), 1);
            assert!(matches!(buffers.claim(&tag, 5, 1 << 20).await.unwrap(), Claim::Fresh(rows) if rows.len() == 2));
            buffers.complete(&tag).await.unwrap();
            assert_eq!(added(buffers.buffer(&tag, "row-3", "[3]").await.unwrap()), (true, 1));
            assert_eq!(buffers.backlog(&tag).await.unwrap().buffered, 1);
        }
        Op::SheetState => {
            let state = SheetState::new(conn, ks);
            state.set_tail(&tag, 12).await.unwrap();
            assert_eq!(state.tail(&tag).await.unwrap(), Some(12));
            state.set_header_known(&tag).await.unwrap();
            assert!(state.header_known(&tag).await.unwrap());
            assert_eq!(state.note_failure(&tag).await.unwrap(), 1);
            state.clear_failures(&tag).await.unwrap();
        }
    }
}

/// What the readers call (the CLI, the drain worker, the steps), after
/// writes spread over several tags: each read stays in one slot.
async fn reads(conn: sluice_redis::Connection, ks: sluice_redis::Keyspace, tag: &Tag) {
    let traces = Traces::new(conn.clone(), ks.clone(), Duration::from_secs(3600));
    traces.record_all(&["ev-a".to_owned(), "ev-b".to_owned()], "received", &serde_json::json!({})).await.unwrap();
    assert_eq!(traces.read("ev-b").await.unwrap().len(), 1);
    let store = SnapshotStore::new(conn.clone(), ks.clone(), 8).unwrap();
    let appended = store.append("acme", "ev-r", &[("body", "{}".to_owned())]).await.unwrap();
    let entries = store.read(appended.shard, "-", 10).await.unwrap();
    assert!(entries.iter().any(|e| e.id == appended.entry_id), "{entries:?}");
    // The drain's reads, acknowledgement and trim (a script) on that shard.
    let consumer = store.consumer("keys-test", "c").unwrap();
    consumer.ensure_group(appended.shard).await.unwrap();
    let taken = consumer.new_entries(appended.shard, 100).await.unwrap();
    let ids: Vec<String> = taken.iter().map(|e| e.id.clone()).collect();
    assert_eq!(consumer.ack(appended.shard, &ids).await.unwrap(), ids.len() as u64);
    assert!(consumer.trim_acknowledged(appended.shard).await.unwrap() >= 1);
    let tokens = TokenStore::new(conn.clone(), ks.clone());
    let token = StoredToken {
        access_token: "a".into(),
        access_expires_ms: 1,
        refresh_token: "r".into(),
        refresh_expires_ms: 4_000_000_000_000,
    };
    tokens.put(tag, "cafe24", &token, 1_763_000_000_000).await.unwrap();
    assert_eq!(tokens.get(tag, "cafe24").await.unwrap().map(|t| t.refresh_token).as_deref(), Some("r"));
    let ledger = GroupLedger::new(conn.clone(), ks.clone());
    // Groups in several shards: the readers gather every shard's slot.
    for group in ["gs:a:1", "gs:b:2", "gs:c:3", "gs:d:4", "gs:e:5"] {
        assert!(ledger.enter(group, "{}", "ev-1").await.unwrap());
    }
    // (Op::Groups may have entered one group before.)
    let (lagging, waiting) = ledger.lagging(10).await.unwrap();
    assert!(lagging.len() >= 5 && waiting == lagging.len() as u64, "{lagging:?} of {waiting}");
    assert!(lagging.iter().all(|g| g.pending == 1 && g.about.as_deref() == Some("{}")), "{lagging:?}");
    assert_eq!(ledger.seen(10).await.unwrap().len(), lagging.len());
    let locks = Locks::new(conn.clone(), ks.clone());
    let Acquire::Acquired(lease) = locks.acquire(tag, "read-lock", Duration::from_secs(30)).await.unwrap() else {
        panic!("fresh lock busy");
    };
    locks.release(&lease).await.unwrap();
    let gates = Gates::new(conn, ks);
    let times = MarkTimes { lease: Duration::from_secs(30), pending: Duration::from_secs(900) };
    assert_eq!(gates.claim(tag, "product:9", "ev-9", true, times).await.unwrap(), Coalescing::Owner);
    assert!(gates.release(tag, "product:9", "ev-9").await.unwrap());
    assert!(gates.mark_pending(tag, "product:8", "ev-8", Duration::from_secs(60)).await.unwrap().passed());
    assert!(gates.clear(tag, "product:8", "ev-8").await.unwrap());
}

#[tokio::test]
async fn every_key_written_has_a_ttl() {
    let redis = TestRedis::new("ttl");
    for op in OPS {
        exercise(&redis, op).await;
    }
    let keys = redis.keys().await;
    // win (2), bkt (3: a tag per op), lock (2), fence (2), gate (3),
    // delivery, joined, trace, stream, seen (2), fetched, token, and the
    // group ledger's pending, waiting, seen, about, done, a mall's backlog
    // (queued, dirty, dirtyq, chain, and the lease of the event it let
    // through), and the token's enrolment: the ops above write 31 keys.
    assert_eq!(keys.len(), 31, "{keys:?}");
    let mut conn = redis.conn().await;
    for key in keys {
        let ttl: i64 = conn.pttl(&key).await.unwrap();
        // The snapshot stream's documented owner is the drain worker.
        // A tenant's enrolment is the operator's (`sluice tokens set`/`withdraw`).
        if key.ends_with(":stream:") || key.contains("}:enrolled:") {
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
    for op in OPS.into_iter().chain(OWNED_OPS) {
        let redis = TestRedis::new("slot");
        exercise(&redis, op).await;
        let keys = redis.keys().await;
        assert!(!keys.is_empty(), "{op:?} wrote nothing");
        // Reads writes under many tags on purpose: its calls are checked
        // by running them on the cluster below.
        if matches!(op, Op::Reads) {
            continue;
        }
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

/// Every op on `redis`, then the keys per node.
async fn exercise_all(redis: &TestRedis) -> Vec<Vec<String>> {
    for op in OPS.into_iter().chain(OWNED_OPS) {
        exercise(redis, op).await;
    }
    redis.keys_by_node().await
}

#[tokio::test]
async fn every_primitive_runs_on_a_cluster_of_three_masters() {
    let redis = TestRedis::cluster("cluster_ops");
    assert!(redis.conn().await.is_cluster());
    let by_node = exercise_all(&redis).await;
    assert_eq!(by_node.len(), CLUSTER_MASTERS);
    // The check is live: the keys are spread, so a call that mixed tags
    // would have met a slot another master owns.
    let holding = by_node.iter().filter(|keys| !keys.is_empty()).count();
    assert!(holding >= 2, "every key on one master: {by_node:?}");
    // And a script call whose keys span two slots fails.
    let mut conn = redis.conn().await;
    let ks = redis.keyspace();
    let spanning: redis::RedisResult<i64> = redis::Script::new("return #KEYS")
        .key(ks.key(&Tag::new("a"), "x", "1"))
        .key(ks.key(&Tag::new("b"), "x", "1"))
        .invoke_async(&mut conn)
        .await;
    let err = spanning.unwrap_err();
    assert!(err.to_string().contains("don't hash to the same slot"), "{err}");
    // As does a pipeline.
    let mixed: redis::RedisResult<(u64, u64)> = redis::pipe()
        .llen(ks.key(&Tag::new("a"), "x", "1"))
        .llen(ks.key(&Tag::new("b"), "x", "1"))
        .query_async(&mut conn)
        .await;
    assert!(mixed.unwrap_err().to_string().contains("crossed slots"));
}

#[tokio::test]
async fn every_primitive_runs_over_tls_as_an_acl_user() {
    let redis = TestRedis::tls("tls_ops");
    assert_eq!(redis.kind(), ServerKind::Tls);
    assert!(redis.url().starts_with("rediss://sluice@"), "{}", redis.url());
    let by_node = exercise_all(&redis).await;
    assert!(!by_node[0].is_empty());
}
