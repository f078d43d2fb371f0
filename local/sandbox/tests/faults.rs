//! Injected faults come at their configured rates, repeatably for a seed.

use serde_json::Map;
use sluice_cafe24::{Cafe24Client, FetchOutcome, Secret, Unavailable};
use sluice_domain::ResourceKind;
use sluice_sandbox::cafe24::{BucketConfig, SandboxConfig};
use sluice_sandbox::{Cafe24Sandbox, FaultConfig, TimeoutMode};
use sluice_testkit::sandbox::cafe24_config;
use std::time::{Duration, Instant};

const MALL: &str = "acme";

async fn setup(faults: FaultConfig) -> (Cafe24Sandbox, Cafe24Client, String, Secret) {
    let config =
        SandboxConfig { bucket: BucketConfig::new(100_000, 10_000.0), faults, ..SandboxConfig::with_malls([MALL]) };
    let sandbox = Cafe24Sandbox::start(config).await.unwrap();
    let id = sandbox.create(MALL, ResourceKind::Product, Map::new()).await.unwrap().id;
    let token = sandbox.issue_tokens(MALL).unwrap().access_token;
    let config = cafe24_config(&sandbox).with_timeouts(Duration::from_secs(5), Duration::from_secs(1));
    (sandbox, Cafe24Client::new(config).unwrap(), id, token)
}

/// Makes `n` sequential calls; returns each status (0 for no usable answer).
async fn statuses(n: usize, faults: FaultConfig) -> (Vec<u16>, Vec<FetchOutcome>) {
    let (sandbox, client, id, token) = setup(faults).await;
    let mut outcomes = Vec::with_capacity(n);
    for _ in 0..n {
        outcomes.push(client.fetch(MALL, ResourceKind::Product, &id, &token).await);
    }
    (sandbox.calls().iter().map(|r| r.status).collect(), outcomes)
}

#[tokio::test]
async fn a_seeded_error_rate_holds_and_repeats() {
    let faults = FaultConfig { server_error_rate: 0.25, seed: 42, ..FaultConfig::default() };
    tokio::time::timeout(Duration::from_secs(60), async {
        let (first, outcomes) = statuses(400, faults).await;
        let errors = first.iter().filter(|s| **s == 500).count();
        // 100 expected; ±3.5 standard deviations.
        assert!((70..=130).contains(&errors), "{errors} server errors in 400 calls");
        assert_eq!(first.iter().filter(|s| **s == 200).count(), 400 - errors);
        let unavailable = outcomes
            .iter()
            .filter(|o| {
                matches!(o, FetchOutcome::Unavailable { cause: Unavailable::ServerError { status: 500, .. }, .. })
            })
            .count();
        assert_eq!(unavailable, errors);
        let (second, _) = statuses(400, faults).await;
        assert_eq!(first, second, "the same seed must give the same faults");
        let (other_seed, _) = statuses(400, FaultConfig { seed: 43, ..faults }).await;
        assert_ne!(first, other_seed);
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn dropped_connections_come_at_their_rate() {
    let faults = FaultConfig { timeout_rate: 0.1, timeout_mode: TimeoutMode::Drop, seed: 5, ..FaultConfig::default() };
    tokio::time::timeout(Duration::from_secs(60), async {
        let (_, outcomes) = statuses(300, faults).await;
        let dropped = outcomes
            .iter()
            .filter(|o| matches!(o, FetchOutcome::Unavailable { cause: Unavailable::Body(_), .. }))
            .count();
        // 30 expected; ±3 standard deviations.
        assert!((15..=45).contains(&dropped), "{dropped} dropped in 300 calls");
        let found = outcomes.iter().filter(|o| matches!(o, FetchOutcome::Found(_))).count();
        assert_eq!(found + dropped, 300);
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn slow_responses_are_slow_and_faults_change_at_run_time() {
    let faults = FaultConfig { latency: Duration::from_millis(40), ..FaultConfig::default() };
    tokio::time::timeout(Duration::from_secs(20), async {
        let (sandbox, client, id, token) = setup(faults).await;
        for _ in 0..5 {
            let started = Instant::now();
            let outcome = client.fetch(MALL, ResourceKind::Product, &id, &token).await;
            assert!(matches!(outcome, FetchOutcome::Found(_)));
            assert!(started.elapsed() >= Duration::from_millis(40), "{:?}", started.elapsed());
        }
        sandbox.set_faults(FaultConfig { server_error_rate: 1.0, ..FaultConfig::default() }).unwrap();
        let outcome = client.fetch(MALL, ResourceKind::Product, &id, &token).await;
        assert!(matches!(outcome, FetchOutcome::Unavailable { .. }), "{outcome:?}");
        let bad = FaultConfig { server_error_rate: 0.7, timeout_rate: 0.7, ..FaultConfig::default() };
        assert!(sandbox.set_faults(bad).is_err());
        assert_eq!(sandbox.faults().server_error_rate, 1.0, "a rejected plan leaves the old one");
    })
    .await
    .unwrap();
}
