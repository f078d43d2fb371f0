//! The in-process deny cache's answer time, next to one Redis round trip.

use crate::verdict;
use sluice_redis::DenyCache;
use std::time::{Duration, Instant};

pub(crate) fn report(round_trip: Duration) {
    let cache = DenyCache::new();
    let keys: Vec<String> = (0..10_000).map(|i| format!("sluice:{{mall-{i:05}}}:bkt:admin")).collect();
    for k in &keys {
        cache.block(k, 1, Duration::from_secs(3600));
    }
    let misses: Vec<String> = (0..10_000).map(|i| format!("sluice:{{other-{i:05}}}:bkt:admin")).collect();
    let time = |keys: &[String]| {
        const N: usize = 5_000_000;
        let started = Instant::now();
        let mut hits = 0usize;
        for i in 0..N {
            hits += usize::from(std::hint::black_box(cache.blocked_for(&keys[i % keys.len()], 1)).is_some());
        }
        (started.elapsed().as_nanos() as f64 / N as f64, hits)
    };
    let (hit_ns, hits) = time(&keys);
    let (miss_ns, misses_hit) = time(&misses);
    assert_eq!(misses_hit, 0);
    assert!(hits > 0);
    let rt_ns = round_trip.as_nanos() as f64;
    println!("\n## Deny cache (10,000 keys blocked)\n");
    println!("| lookup | ns | vs one Redis round trip ({:.0} ns) | target |", rt_ns);
    println!("|---|---:|---:|---|");
    println!(
        "| blocked key (answers the denial) | {hit_ns:.0} | {:.0}× faster | ≤ 100 ns: {} |",
        rt_ns / hit_ns,
        verdict(hit_ns <= 100.0)
    );
    println!("| unknown key (falls through to Redis) | {miss_ns:.0} | | |");
}
