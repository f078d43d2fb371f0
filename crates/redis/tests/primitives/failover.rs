//! A cluster master failed over under an open connection: the connection
//! `sluice_redis::connect` gives, with the settings `sluice dev` uses
//! (1 s to connect, 500 ms an answer, one retry), must reach the promoted
//! replica by itself (MOVED, then a fresh slot map), without reconnecting,
//! whether the master was switched (`CLUSTER FAILOVER`) or killed.

use sluice_redis::{ConnectSettings, Connection, Tag, connect};
use sluice_testkit::TestRedis;
use sluice_testkit::failover::{Failover, FailoverKind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long after the promotion the connection may take to write again.
const RECOVERY_LIMIT: Duration = Duration::from_secs(10);
const KEYS: usize = 50;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_connection_follows_a_master_failed_over_by_itself() {
    let redis = TestRedis::cluster_with_replicas("failover");
    let keyspace = redis.keyspace();
    let switched = keyspace.key(&Tag::new("switched"), "k", "x");
    let killed = keyspace.key(&Tag::new("kill"), "k", "x");
    let [a, b] = [redis.master_of(&switched, 0).await, redis.master_of(&killed, 0).await];
    assert_ne!(a, b, "the two tags were chosen to live on two masters");
    // Reached through the third master, which stays up.
    let nodes = redis.cluster_nodes(0).await;
    let seed = nodes.iter().find(|n| n.master && ![a, b].contains(&n.index)).expect("a third master").index;
    let mut settings = ConnectSettings {
        connect_timeout: Duration::from_secs(1),
        response_timeout: Duration::from_millis(500),
        reconnect_retries: 1,
        ..redis.settings()
    };
    settings.url = redis.server().node_settings(seed).url;
    let mut conn = connect(&settings).await.unwrap();

    for (key, kind) in [(&switched, FailoverKind::Graceful), (&killed, FailoverKind::Kill)] {
        for i in 0..KEYS {
            let _: () = redis::cmd("SET").arg(format!("{key}{i}")).arg(i).query_async(&mut conn).await.unwrap();
        }
        let stop = Arc::new(AtomicBool::new(false));
        let probe = tokio::spawn(probe(conn.clone(), format!("{key}probe"), stop.clone()));
        let failover = redis.fail_over(key, seed, kind).await;
        stop.store(true, Ordering::Relaxed);
        let meanwhile = probe.await.unwrap();
        let (recovered, errors) = write_again(&mut conn, key).await;
        println!(
            "{kind:?}: node {} took over from node {} {} ms after the {}; the connection wrote again {} ms after \
             that; errors meanwhile: {errors:?}",
            failover.replica,
            failover.master,
            (failover.promoted - failover.started).as_millis(),
            if kind == FailoverKind::Kill { "kill" } else { "request" },
            recovered.saturating_duration_since(failover.promoted).as_millis(),
        );
        // The first command after the promotion succeeds: a redirect to
        // the new master must not use up the retries (CLUSTER_MIN_RETRIES).
        assert!(errors.is_empty(), "{kind:?}: commands failed after the promotion: {errors:?}");
        // While the slot is away a command fails with what the cluster
        // says (CLUSTERDOWN, a refused connection), not by running out its
        // answer timeout in a retry's wait: ingest answers 503 after a few
        // such commands, and each used to cost the whole 500 ms.
        let timeouts: Vec<&String> = meanwhile.iter().filter(|(_, timeout)| *timeout).map(|(e, _)| e).collect();
        println!("{kind:?}: {} commands failed meanwhile, {} by timeout", meanwhile.len(), timeouts.len());
        assert!(timeouts.is_empty(), "{kind:?}: commands timed out during the failover: {timeouts:?}");
        assert_kept(&mut conn, key, &failover).await;
    }
}

/// Writes `key` again and again until `stop`: the errors, and whether each
/// was a timeout.
async fn probe(mut conn: Connection, key: String, stop: Arc<AtomicBool>) -> Vec<(String, bool)> {
    let mut errors = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        if let Err(e) = redis::cmd("SET").arg(&key).arg(1).query_async::<()>(&mut conn).await {
            errors.push((e.to_string(), e.is_timeout()));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    errors
}

/// Writes `key` until it succeeds: when, and the errors before.
async fn write_again(conn: &mut Connection, key: &str) -> (Instant, Vec<String>) {
    let deadline = Instant::now() + sluice_testkit::failover::FAILOVER_LIMIT + RECOVERY_LIMIT;
    let mut errors = Vec::new();
    loop {
        match redis::cmd("SET").arg(key).arg("again").query_async::<()>(conn).await {
            Ok(()) => return (Instant::now(), errors),
            Err(e) => errors.push(e.to_string()),
        }
        assert!(Instant::now() < deadline, "no write within {RECOVERY_LIMIT:?} of the failover: {errors:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Every key written before the failover is there, read through the
/// same connection.
async fn assert_kept(conn: &mut Connection, key: &str, failover: &Failover) {
    for i in 0..KEYS {
        let value: Option<usize> = redis::cmd("GET").arg(format!("{key}{i}")).query_async(conn).await.unwrap();
        assert_eq!(value, Some(i), "{key}{i} after {failover:?}");
    }
}
