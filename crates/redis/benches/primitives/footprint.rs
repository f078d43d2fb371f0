//! `MEMORY USAGE` per key for each primitive, under production key names,
//! next to a sliding-window log kept as a sorted set of µs members (the
//! usual design, which the limiter's LIST log replaces).

use crate::verdict;
use redis::aio::MultiplexedConnection;
use sluice_redis::{Acquire, BucketSpec, Buckets, DenyCache, Gates, Keyspace, Limit, Locks, SlidingWindowLimiter, Tag};
use std::sync::Arc;
use std::time::Duration;

async fn memory_usage(conn: &mut MultiplexedConnection, key: &str) -> u64 {
    redis::cmd("MEMORY").arg("USAGE").arg(key).arg("SAMPLES").arg(0).query_async(conn).await.expect("MEMORY USAGE")
}

pub(crate) async fn report(client: &redis::Client) {
    // Production key names: default prefix, a realistic mall / project tag.
    let ks = Keyspace::default();
    let mut conn = client.get_multiplexed_async_connection().await.expect("connect");
    let deny = Arc::new(DenyCache::disabled());
    let tag = Tag::new("mall-00001");
    let buckets = Buckets::new(conn.clone(), ks.clone(), deny.clone());
    let bucket = buckets.bucket(&tag, "admin", BucketSpec::default()).expect("bucket");
    buckets.acquire(&bucket, 1).await.expect("gcra");
    let gcra = memory_usage(&mut conn, bucket.key()).await;
    let locks = Locks::new(conn.clone(), ks.clone());
    let Acquire::Acquired(lease) = locks.acquire(&tag, "sync", Duration::from_secs(60)).await.expect("lock") else {
        panic!("lock busy")
    };
    let lock = memory_usage(&mut conn, lease.key()).await;
    let fence = memory_usage(&mut conn, &ks.key(&tag, "fence", "sync")).await;
    let gates = Gates::new(conn.clone(), ks.clone());
    gates
        .mark_pending(&tag, "product:123456", "s:mall-00001:90001:product:123456:trace", Duration::from_secs(60))
        .await
        .expect("gate");
    let gate = memory_usage(&mut conn, &ks.key(&tag, "gate", "product:123456")).await;

    println!("\n## Memory per key (MEMORY USAGE, default prefix `sluice:`, tag `mall-00001`)\n");
    println!("| key | bytes | target |");
    println!("|---|---:|---|");
    println!("| GCRA bucket `{}` | {gcra} | ≤ 64: {} |", bucket.key(), verdict(gcra <= 64));
    println!("| lock `{}` | {lock} | ≤ 128: {} |", lease.key(), verdict(lock <= 128));
    println!("| lock's fence `{}` | {fence} | (one per lock name) |", ks.key(&tag, "fence", "sync"));
    println!("| pending mark (event id as owner) | {gate} | |");
    // Why the GCRA key is what it is: the TAT is an integer, which Redis
    // keeps inside the key's object, so a bucket costs what any integer
    // string key of the same name costs; only the name's length moves it.
    for name in ["sluice:{acme}:bkt:a", "{acme}:bkt:a"] {
        let _: () = redis::cmd("SET")
            .arg(name)
            .arg(1_763_000_000_000_000u64)
            .arg("PX")
            .arg(60_000)
            .query_async(&mut conn)
            .await
            .expect("SET");
        let bytes = memory_usage(&mut conn, name).await;
        println!("| the same TAT under a {}-char name `{name}` (for comparison) | {bytes} | |", name.len());
    }
    println!(
        "\nRedis 7.0 charges every key 40 B (object + dict entry) plus its name's allocation: 16 B for names of \
         up to 14 chars, 32 B for 15 to 30. The TAT adds nothing (an integer inside the object)."
    );

    println!("\n## Sliding log, bytes per recorded call\n");
    println!("| calls in window | sluice LIST log | sorted-set log (ZSET, µs members) | ratio |");
    println!("|---:|---:|---:|---:|");
    let limiter = SlidingWindowLimiter::new(conn.clone(), ks.clone(), deny);
    let project = Tag::new("project-123456789");
    for n in [60u32, 300] {
        let set =
            limiter.limits(&project, &[Limit::new(format!("cred:{n}"), n, Duration::from_secs(60))]).expect("limits");
        for _ in 0..n {
            assert!(limiter.acquire(&set, 1).await.expect("limiter").is_admitted());
        }
        let list = memory_usage(&mut conn, &set.keys()[0]).await;
        // The usual log: a sorted set with µs timestamps as member and score.
        let zkey = ks.key(&project, "zset", &format!("cred:{n}"));
        let base = 1_763_000_000_000_000u64;
        for j in 0..u64::from(n) {
            let ts = base + j * 1000;
            let _: () = redis::cmd("ZADD").arg(&zkey).arg(ts).arg(ts).query_async(&mut conn).await.expect("ZADD");
        }
        let zset = memory_usage(&mut conn, &zkey).await;
        let per_list = list as f64 / f64::from(n);
        let per_zset = zset as f64 / f64::from(n);
        println!(
            "| {n} | {per_list:.1} (≤ 40: {}) | {per_zset:.1} | {:.2}× |",
            verdict(per_list <= 40.0),
            per_list / per_zset
        );
    }
}
