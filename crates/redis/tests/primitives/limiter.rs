//! The sliding-window limiter against a real redis-server.

use redis::AsyncCommands;
use sluice_redis::{Admission, DenyCache, Error, Limit, LimitSet, SlidingWindowLimiter, Tag};
use sluice_testkit::TestRedis;
use std::sync::{Arc, Mutex};
use std::time::Duration;

type Limiter = SlidingWindowLimiter<sluice_redis::Connection>;

async fn limiter(redis: &TestRedis) -> Limiter {
    SlidingWindowLimiter::new(redis.conn().await, redis.keyspace(), Arc::new(DenyCache::new()))
}

/// A limiter whose every answer comes from Redis, to see the script's answers.
async fn uncached(redis: &TestRedis) -> Limiter {
    SlidingWindowLimiter::new(redis.conn().await, redis.keyspace(), Arc::new(DenyCache::disabled()))
}

fn us(d: Duration) -> u64 {
    d.as_micros() as u64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_four_callers_get_exactly_n_per_window() {
    const N: u32 = 5;
    const WINDOW: Duration = Duration::from_millis(250);
    const RUN: Duration = Duration::from_millis(1500);
    let redis = TestRedis::new("exact_n");
    let limiter = Arc::new(limiter(&redis).await);
    let set = Arc::new(limiter.limits(&Tag::new("proj"), &[Limit::new("cred", N, WINDOW)]).unwrap());
    let admitted = Arc::new(Mutex::new(Vec::new()));
    let denied = Arc::new(Mutex::new(Vec::new()));
    let started = tokio::time::Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..64 {
        let (limiter, set, admitted, denied) = (limiter.clone(), set.clone(), admitted.clone(), denied.clone());
        tasks.push(tokio::spawn(async move {
            while started.elapsed() < RUN {
                match limiter.acquire(&set, 1).await.unwrap() {
                    Admission::Admitted { server_time_us } => admitted.lock().unwrap().push(server_time_us),
                    Admission::Denied { wait, server_time_us } => {
                        if let Some(at) = server_time_us {
                            denied.lock().unwrap().push((at, us(wait)));
                        }
                        // Waiting the wait given is how callers use the limiter.
                        tokio::time::sleep(wait).await;
                    }
                }
            }
        }));
    }
    tokio::time::timeout(RUN * 4, async {
        for t in tasks {
            t.await.unwrap();
        }
    })
    .await
    .expect("callers finished");

    let mut admitted = admitted.lock().unwrap().clone();
    admitted.sort_unstable();
    let denied = denied.lock().unwrap().clone();
    let n = N as usize;
    assert!(admitted.len() >= 3 * n, "only {} admitted", admitted.len());
    // Never N+1: any N+1 consecutive admissions span at least a window.
    for pair in admitted.windows(n + 1) {
        assert!(pair[n] - pair[0] >= us(WINDOW), "{} admitted within {}µs", n + 1, pair[n] - pair[0]);
    }
    // Exactly N: a denial happens only with N admissions in (t - W, t], and
    // its wait ends exactly when the oldest of them leaves the window.
    assert!(!denied.is_empty(), "64 callers never over-ran a limit of {N}");
    for (at, wait) in &denied {
        let in_window: Vec<u64> = admitted.iter().copied().filter(|&a| a > at - us(WINDOW) && a <= *at).collect();
        assert_eq!(in_window.len(), n, "denied at {at} with {} admitted in the window", in_window.len());
        assert_eq!(at + wait, in_window[0] + us(WINDOW), "denied at {at}: wrong wait {wait}");
    }
}

#[tokio::test]
async fn denied_calls_do_not_extend_the_block() {
    const WINDOW: Duration = Duration::from_secs(1);
    let redis = TestRedis::new("no_extend");
    let limiter = limiter(&redis).await;
    let direct = uncached(&redis).await;
    let set = limiter.limits(&Tag::new("p"), &[Limit::new("user", 3, WINDOW)]).unwrap();
    let mut stamps = Vec::new();
    for _ in 0..3 {
        stamps.push(limiter.acquire(&set, 1).await.unwrap().server_time_us().unwrap());
    }
    let frees_at = stamps[0] + us(WINDOW);
    for _ in 0..50 {
        let Admission::Denied { wait, server_time_us: Some(at) } = direct.acquire(&set, 1).await.unwrap() else {
            panic!("a full window admitted a call");
        };
        assert_eq!(at + us(wait), frees_at, "a denial moved the end of the block");
    }
    let mut conn = redis.conn().await;
    let logged: usize = conn.llen(&set.keys()[0]).await.unwrap();
    assert_eq!(logged, 3, "denied calls were recorded");
    // After the wait given, the caller gets through.
    let Admission::Denied { wait, .. } = limiter.acquire(&set, 1).await.unwrap() else { panic!("admitted early") };
    tokio::time::sleep(wait).await;
    let admitted = direct.acquire(&set, 1).await.unwrap();
    assert!(admitted.server_time_us().unwrap() >= frees_at);
    assert!(admitted.is_admitted(), "denied after waiting the wait given: {admitted:?}");
}

#[tokio::test]
async fn same_microsecond_calls_all_count() {
    let redis = TestRedis::new("same_us");
    let limiter = limiter(&redis).await;
    let direct = uncached(&redis).await;
    let set = limiter.limits(&Tag::new("p"), &[Limit::new("burst", 10, Duration::from_secs(60))]).unwrap();
    // A cost of 4 is recorded as four calls at one and the same microsecond.
    assert!(limiter.acquire(&set, 4).await.unwrap().is_admitted());
    assert!(limiter.acquire(&set, 4).await.unwrap().is_admitted());
    assert!(!direct.acquire(&set, 3).await.unwrap().is_admitted());
    assert!(direct.acquire(&set, 2).await.unwrap().is_admitted());
    let mut conn = redis.conn().await;
    let log: Vec<u64> = conn.lrange(&set.keys()[0], 0, -1).await.unwrap();
    assert_eq!(log.len(), 10);
    assert_eq!(log[0], log[3], "one cost-4 call is four equal stamps");
    // A pipelined burst from one connection: calls land microseconds apart or
    // in the same one; either way exactly the remaining room is admitted.
    let set = limiter.limits(&Tag::new("p"), &[Limit::new("pipelined", 10, Duration::from_secs(60))]).unwrap();
    let answers = futures::future::join_all((0..40).map(|_| limiter.acquire(&set, 1))).await;
    let admitted = answers.into_iter().filter(|a| a.as_ref().unwrap().is_admitted()).count();
    assert_eq!(admitted, 10);
    let logged: usize = conn.llen(&set.keys()[0]).await.unwrap();
    assert_eq!(logged, 10);
}

#[tokio::test]
async fn several_limits_are_checked_together_and_recorded_only_together() {
    const WINDOW: Duration = Duration::from_secs(60);
    let redis = TestRedis::new("multi");
    let limiter = limiter(&redis).await;
    let direct = uncached(&redis).await;
    let project = Tag::new("project-1");
    let cred_a =
        limiter.limits(&project, &[Limit::new("cred:a", 3, WINDOW), Limit::new("project", 5, WINDOW)]).unwrap();
    let cred_b =
        limiter.limits(&project, &[Limit::new("cred:b", 3, WINDOW), Limit::new("project", 5, WINDOW)]).unwrap();
    let mut first = None;
    for _ in 0..3 {
        let at = limiter.acquire(&cred_a, 1).await.unwrap().server_time_us().unwrap();
        first.get_or_insert(at);
    }
    assert!(!direct.acquire(&cred_a, 1).await.unwrap().is_admitted(), "credential limit of 3 let a 4th through");
    assert!(limiter.acquire(&cred_b, 1).await.unwrap().is_admitted());
    assert!(limiter.acquire(&cred_b, 1).await.unwrap().is_admitted());
    // Credential b has room, the project has not: denied until the project's
    // oldest call leaves its window, and nothing is recorded anywhere.
    let Admission::Denied { wait, server_time_us: Some(at) } = direct.acquire(&cred_b, 1).await.unwrap() else {
        panic!("project limit of 5 let a 6th through");
    };
    assert_eq!(at + us(wait), first.unwrap() + us(WINDOW));
    let mut conn = redis.conn().await;
    let b_log: usize = conn.llen(&cred_b.keys()[0]).await.unwrap();
    let project_log: usize = conn.llen(&cred_b.keys()[1]).await.unwrap();
    assert_eq!((b_log, project_log), (2, 5));
}

#[tokio::test]
async fn minimum_spacing_holds_calls_apart_exactly() {
    const SPACING: Duration = Duration::from_millis(500);
    let redis = TestRedis::new("spacing");
    let limiter = uncached(&redis).await;
    let set = limiter
        .limits(&Tag::new("t"), &[Limit::new("alerts", 10, Duration::from_secs(10)).with_min_spacing(SPACING)])
        .unwrap();
    let first = limiter.acquire(&set, 1).await.unwrap().server_time_us().unwrap();
    let Admission::Denied { wait, server_time_us: Some(at) } = limiter.acquire(&set, 1).await.unwrap() else {
        panic!("a call right after another passed a 500 ms spacing");
    };
    assert_eq!(at + us(wait), first + us(SPACING));
    tokio::time::sleep(wait).await;
    let next = limiter.acquire(&set, 1).await.unwrap();
    assert!(next.is_admitted(), "{next:?}");
    assert!(next.server_time_us().unwrap() - first >= us(SPACING));
}

#[tokio::test]
async fn impossible_limits_and_costs_are_refused_with_their_reason() {
    let redis = TestRedis::new("config");
    let limiter = limiter(&redis).await;
    let tag = Tag::new("t");
    let err = |r: Result<LimitSet, Error>| r.unwrap_err().to_string();
    assert!(err(limiter.limits(&tag, &[])).contains("at least one limit"));
    assert!(err(limiter.limits(&tag, &[Limit::new("a", 0, Duration::from_secs(1))])).contains("`a`: max"));
    let spaced = Limit::new("a", 1, Duration::from_secs(1)).with_min_spacing(Duration::from_secs(2));
    assert!(err(limiter.limits(&tag, &[spaced])).contains("longer than the window"));
    let twice = [Limit::new("a", 1, Duration::from_secs(1)), Limit::new("a", 2, Duration::from_secs(1))];
    assert!(err(limiter.limits(&tag, &twice)).contains("listed twice"));
    let set = limiter.limits(&tag, &[Limit::new("a", 3, Duration::from_secs(1))]).unwrap();
    let too_big = limiter.acquire(&set, 4).await.unwrap_err().to_string();
    assert!(too_big.contains("cost 4 can never be admitted"), "{too_big}");
    assert!(redis.keys().await.is_empty(), "a refused call wrote to Redis");
}
