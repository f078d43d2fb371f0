//! An in-process "blocked until" cache. A caller just denied by a limiter or
//! bucket was told exactly how long to wait; asking Redis again before then
//! can only be denied again, so the answer is served from memory instead.
//! The cache only ever repeats a denial Redis gave; it never admits.

use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher, RandomState};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

const SHARDS: usize = 16;
/// A shard holding more entries than this drops the expired ones on insert,
/// so memory stays bounded by the number of keys blocked at one time.
const PRUNE_AT: usize = 1024;

/// Keys are hashed once (SipHash, randomly keyed); the hash picks the shard
/// and is the map key, and the entry keeps the key itself to rule out a
/// collision. A collision only costs a Redis call: the newer block replaces
/// the older, and a lookup whose key differs is a miss.
#[derive(Debug)]
pub struct DenyCache {
    enabled: bool,
    hasher: RandomState,
    shards: [Mutex<Shard>; SHARDS],
}

type Shard = HashMap<u64, Block, BuildHasherDefault<PassThrough>>;

#[derive(Debug, Clone)]
struct Block {
    key: Box<str>,
    until: Instant,
    /// The cost that was denied: a smaller request might still fit.
    cost: u32,
}

/// The map's keys are already SipHash values; hashing them again is waste.
#[derive(Debug, Default)]
struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

impl Default for DenyCache {
    fn default() -> Self {
        Self::new()
    }
}

impl DenyCache {
    pub fn new() -> Self {
        Self {
            enabled: true,
            hasher: RandomState::new(),
            shards: std::array::from_fn(|_| Mutex::new(Shard::default())),
        }
    }

    /// A cache that remembers nothing, so every call asks Redis (for
    /// measuring Redis's side, or callers that must see every answer).
    pub fn disabled() -> Self {
        Self { enabled: false, ..Self::new() }
    }

    fn locate(&self, key: &str) -> (u64, &Mutex<Shard>) {
        let hash = self.hasher.hash_one(key);
        // The top bits pick the shard; the map's buckets use the low bits.
        (hash, &self.shards[(hash >> 60) as usize % SHARDS])
    }

    /// How much longer `key` is blocked for a request of `cost`, if it is.
    pub fn blocked_for(&self, key: &str, cost: u32) -> Option<Duration> {
        let (hash, shard) = self.locate(key);
        let until = {
            let map = shard.lock().unwrap_or_else(PoisonError::into_inner);
            let block = map.get(&hash).filter(|b| &*b.key == key && cost >= b.cost)?;
            block.until
        };
        let left = until.saturating_duration_since(Instant::now());
        (!left.is_zero()).then_some(left)
    }

    /// Remembers that a request of `cost` on `key` was denied for `wait`.
    pub fn block(&self, key: &str, cost: u32, wait: Duration) {
        if !self.enabled {
            return;
        }
        let now = Instant::now();
        let block = Block { key: key.into(), until: now + wait, cost };
        let (hash, shard) = self.locate(key);
        let mut map = shard.lock().unwrap_or_else(PoisonError::into_inner);
        if map.len() >= PRUNE_AT {
            map.retain(|_, b| b.until > now);
        }
        map.insert(hash, block);
    }

    /// Number of keys currently remembered (expired ones included until pruned).
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().unwrap_or_else(PoisonError::into_inner).len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_a_denial_until_its_wait_is_over() {
        let cache = DenyCache::new();
        assert_eq!(cache.blocked_for("k", 1), None);
        cache.block("k", 1, Duration::from_secs(60));
        let left = cache.blocked_for("k", 1).unwrap();
        assert!(left > Duration::from_secs(59) && left <= Duration::from_secs(60));
        cache.block("k", 1, Duration::ZERO);
        assert_eq!(cache.blocked_for("k", 1), None);
    }

    #[test]
    fn a_smaller_request_is_not_refused_on_a_larger_ones_denial() {
        let cache = DenyCache::new();
        cache.block("k", 5, Duration::from_secs(60));
        assert_eq!(cache.blocked_for("k", 1), None);
        assert!(cache.blocked_for("k", 5).is_some());
        assert!(cache.blocked_for("k", 6).is_some());
    }

    #[test]
    fn a_disabled_cache_remembers_nothing() {
        let cache = DenyCache::disabled();
        cache.block("k", 1, Duration::from_secs(60));
        assert_eq!(cache.blocked_for("k", 1), None);
        assert!(cache.is_empty());
    }

    #[test]
    fn expired_entries_are_pruned() {
        let cache = DenyCache::new();
        for i in 0..(PRUNE_AT * SHARDS * 2) {
            cache.block(&format!("k{i}"), 1, Duration::ZERO);
        }
        assert!(cache.len() <= PRUNE_AT * SHARDS, "{} entries kept", cache.len());
    }
}
