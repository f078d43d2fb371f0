//! Issue 18 item 3, the cluster half: a master of the TLS cluster (three
//! masters, a replica each, as an ElastiCache cluster with replicas is)
//! fails while webhooks keep coming, and its replica takes over. `sluice
//! dev` is not restarted: its cluster connection must find the promoted
//! replica by itself, ingest must answer `503` with `Retry-After` and a
//! JSON body while the slots are away (never a `202` for an event it could
//! not store), and nothing it accepted may be lost.
//!
//! The master failed is the one serving the embedded queue's slot (every
//! accepted event is written there), and one of the two malls lives on it
//! too. It is killed (`kill -9`: a node lost; the other masters count it
//! failed after the cluster's 2 s node timeout and elect its replica) or
//! switched (`CLUSTER FAILOVER` on the replica, a planned failover). The
//! stack, senders and checks are `redis_restart.rs`'s (support/
//! outage_stack.rs); here only the cluster and the failover. Figures are
//! printed (`--nocapture`) for `bench/chaos.md`.
//!
//! `make test` runs one short kill (`SLUICE_CHAOS_SEED` picks another
//! seed); `make chaos` runs the ignored pair, one kill and one switch.

use crate::support::outage_stack;
use crate::support::redis_outage as outage;

use outage::{Figures, Outage};
use outage_stack::{DRAIN_LIMIT, OutageStack};
use sluice_redis::ClusterMode;
use sluice_testkit::chaos_report::ChaosRow;
use sluice_testkit::failover::{ClusterNode, FAILOVER_LIMIT, Failover, FailoverKind};
use sluice_testkit::{TestRedis, key_slot};
use std::path::Path;
use std::time::{Duration, Instant};

/// The shape of one run.
#[derive(Debug, Clone, Copy)]
struct Plan {
    seed: u64,
    kind: FailoverKind,
    products_per_mall: usize,
    senders: usize,
    /// Webhooks before the failover, and after it starts (a kill takes
    /// some 4 s to be replaced: the node timeout, then the election;
    /// a sender still retrying when it ends goes on until accepted).
    before: Duration,
    after: Duration,
}

impl Plan {
    fn short(seed: u64, kind: FailoverKind) -> Self {
        let (before, after) = (Duration::from_secs(2), Duration::from_secs(6));
        Self { seed, kind, products_per_mall: 6, senders: 6, before, after }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_master_killed_under_load_is_replaced_and_nothing_accepted_is_lost() {
    let seed = std::env::var("SLUICE_CHAOS_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(18);
    run(Plan::short(seed, FailoverKind::Kill)).await;
}

/// The `make chaos` pair: a longer kill, then a planned switch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long: two failovers; run with --ignored"]
async fn cluster_failovers_kill_and_switch_lose_nothing() {
    let longer = |plan: Plan| Plan { before: Duration::from_secs(5), after: Duration::from_secs(10), ..plan };
    let killed = run(longer(Plan::short(1, FailoverKind::Kill))).await;
    record("cluster_failover_kill", "Redis cluster master killed (kill -9) under load, its replica promoted", &killed);
    let switched = run(longer(Plan::short(2, FailoverKind::Graceful))).await;
    record(
        "cluster_failover_switch",
        "Redis cluster master switched to its replica (CLUSTER FAILOVER) under load",
        &switched,
    );
}

/// A run's figures as a row of `bench/chaos.md`.
fn record(file: &str, scenario: &str, (figures, failover): &(Figures, Failover)) {
    ChaosRow {
        scenario: scenario.into(),
        runs: 1,
        sent: figures.sent,
        lost: figures.lost.len(),
        duplicated: figures.duplicated.len(),
        recovered_in: figures.recovered_after,
        notes: format!(
            "{} accepted; replica serving {} ms after the {}; {} posts under way meanwhile, {} sent and answered \
             in it: {} 503 + Retry-After, {} 202 (events on the other masters), {} anything else; 5xx over the run \
             {:?}; Cafe24 429s {}; recovered = replica serving to the first 202",
            figures.accepted,
            (failover.promoted - failover.started).as_millis(),
            if failover.kind == FailoverKind::Kill { "kill" } else { "CLUSTER FAILOVER" },
            figures.overlapping,
            figures.while_down,
            figures.down_503,
            figures.down_202,
            figures.down_wrong.len(),
            figures.refusals,
            figures.upstream_429,
        ),
    }
    .record(&Path::new(env!("CARGO_TARGET_TMPDIR")).join("chaos"), file);
}

/// The whole run, bounded: a stall fails with what was seen, never hangs.
async fn run(plan: Plan) -> (Figures, Failover) {
    let limit = plan.before + FAILOVER_LIMIT + plan.after + outage::SENDER_PATIENCE + DRAIN_LIMIT;
    let dir = std::env::temp_dir().join(format!("sluice-cluster-failover-{}-{}", std::process::id(), plan.seed));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let outcome = tokio::time::timeout(limit, go(plan, &dir)).await;
    // Every process of the run is dropped by now (killed on drop).
    let _ = std::fs::remove_dir_all(&dir);
    outcome.unwrap_or_else(|_| panic!("seed {}: the run did not finish within {limit:?}", plan.seed))
}

async fn go(plan: Plan, dir: &Path) -> (Figures, Failover) {
    let started_at = Instant::now();
    let redis = TestRedis::cluster_with_replicas("cluster_failover");
    let formed_in = started_at.elapsed();
    // The queue's slot decides every 202: its master is the one to fail.
    let queue_key = "{sqs}";
    let nodes = redis.cluster_nodes(0).await;
    let victim = owner(&nodes, queue_key);
    // sluice reaches the cluster through a master that stays up, as
    // ElastiCache's endpoint stays up.
    let seed = nodes.iter().find(|n| n.master && n.index != victim).expect("another master").index;
    let malls = [mall_on(&nodes, victim, true), mall_on(&nodes, victim, false)];
    let server = redis.server();
    let ca = server.ca_file().expect("a TLS cluster has a CA");
    let env = [
        ("SLUICE_REDIS_URL", server.node_url_with_password(seed)),
        ("SLUICE_REDIS_CA_FILE", ca.display().to_string()),
        ("SLUICE_REDIS_CLUSTER", "on".to_owned()),
    ];
    let mut reader = server.node_settings(seed);
    reader.cluster = ClusterMode::On;
    let mut stack = OutageStack::start(dir, &malls, plan.products_per_mall, reader, &env).await;

    let started = Instant::now();
    let stream = stack.stream(plan.seed, plan.senders, started + plan.before + plan.after);
    tokio::time::sleep_until((started + plan.before).into()).await;
    let failover = redis.fail_over(queue_key, seed, plan.kind).await;
    let outage = if plan.kind == FailoverKind::Kill { Outage::OneMaster } else { Outage::Switch };
    let (figures, problems) = stack.finish(stream, outage, [failover.started, failover.promoted]).await;
    println!(
        "seed {} ({:?} of node {} after {:.1} s of webhooks; node {} serving {} ms later; malls {malls:?}, the \
         first on the failed master; cluster formed in {} ms): {figures}",
        plan.seed,
        plan.kind,
        failover.master,
        plan.before.as_secs_f64(),
        failover.replica,
        (failover.promoted - failover.started).as_millis(),
        formed_in.as_millis(),
    );
    assert!(problems.is_empty(), "seed {}: {}", plan.seed, problems.join("\n"));
    stack.stop();
    (figures, failover)
}

/// The index of the master serving `key`'s slot.
fn owner(nodes: &[ClusterNode], key: &str) -> usize {
    let slot = key_slot(key);
    let serving = nodes.iter().find(|n| n.master && n.slots.iter().any(|&(a, b)| a <= slot && slot <= b));
    serving.unwrap_or_else(|| panic!("no master serves slot {slot}: {nodes:?}")).index
}

/// A mall whose keys live on master `victim` (`on`), or on another one.
fn mall_on(nodes: &[ClusterNode], victim: usize, on: bool) -> String {
    let name = (1..).map(|n| format!("failover{n}"));
    let mut fitting = name.filter(|mall| (owner(nodes, &format!("{{mall:{mall}}}")) == victim) == on);
    fitting.next().expect("some mall name fits")
}
