//! The sandbox's leaky bucket is exact: checked call by call against an
//! independent model replayed from the recorded times.

use serde_json::json;
use sluice_cafe24::{Cafe24Client, FetchOutcome, Secret};
use sluice_domain::ResourceKind;
use sluice_sandbox::Cafe24Sandbox;
use sluice_sandbox::cafe24::{BucketConfig, CallRecord, Refusal, SandboxConfig};
use sluice_testkit::sandbox::cafe24_client;
use std::time::Duration;

const MALL: &str = "acme";

async fn setup(bucket: BucketConfig) -> (Cafe24Sandbox, Cafe24Client, String, Secret) {
    let sandbox = Cafe24Sandbox::start(SandboxConfig { bucket, ..SandboxConfig::with_malls([MALL]) }).await.unwrap();
    let fields = json!({"product_name": "Tea"}).as_object().cloned().unwrap();
    let id = sandbox.create(MALL, ResourceKind::Product, fields).await.unwrap().id;
    let token = sandbox.issue_tokens(MALL).unwrap().access_token;
    let client = cafe24_client(&sandbox);
    (sandbox, client, id, token)
}

/// Replays a leaky bucket from the records' times alone and checks every
/// recorded level and decision against it.
fn replay(records: &[CallRecord], bucket: BucketConfig) {
    let (capacity, drain) = (f64::from(bucket.capacity), bucket.leak_per_sec);
    let (mut level, mut t) = (0.0_f64, Duration::ZERO);
    for r in records {
        level = (level - drain * (r.at - t).as_secs_f64()).max(0.0);
        t = r.at;
        assert!((r.bucket_before - level).abs() < 1e-6, "call {}: before {} != model {level}", r.seq, r.bucket_before);
        let admit = level + 1.0 <= capacity + 1e-9;
        assert_eq!(r.refused.is_none(), admit, "call {} at {:?}", r.seq, r.at);
        if admit {
            level += 1.0;
        } else {
            assert_eq!(r.refused, Some(Refusal::Bucket));
            assert_eq!(r.status, 429);
        }
        assert!((r.bucket_after - level).abs() < 1e-6, "call {}: after {} != model {level}", r.seq, r.bucket_after);
    }
}

#[tokio::test]
async fn capacity_plus_one_rapid_calls_admit_exactly_capacity_then_the_drain_frees_room() {
    let bucket = BucketConfig::new(10, 4.0);
    tokio::time::timeout(Duration::from_secs(20), async {
        let (sandbox, client, id, token) = setup(bucket).await;
        let mut outcomes = Vec::new();
        for _ in 0..=bucket.capacity {
            outcomes.push(client.fetch(MALL, ResourceKind::Product, &id, &token).await);
        }
        let calls = sandbox.calls();
        let span = calls.last().unwrap().at - calls[0].at;
        // Under a quarter of a second nothing drains a whole call at 4/s.
        assert!(span.as_secs_f64() < 1.0 / bucket.leak_per_sec, "burst too slow to be exact: {span:?}");
        let admitted = calls.iter().filter(|r| r.refused.is_none()).count();
        assert_eq!(admitted, bucket.capacity as usize);
        assert_eq!(calls.last().unwrap().refused, Some(Refusal::Bucket));
        assert!(matches!(outcomes.last(), Some(FetchOutcome::Throttled { .. })));
        // Every answer carried X-Api-Call-Limit with the level it reports.
        for (outcome, record) in outcomes.iter().zip(&calls) {
            let limit = outcome.usage().and_then(|u| u.call_limit).expect("X-Api-Call-Limit on every answer");
            assert_eq!(limit.capacity, bucket.capacity);
            assert_eq!(f64::from(limit.used), (record.bucket_after - 1e-9).ceil());
        }
        replay(&calls, bucket);

        // Room for one call opens when the level has drained to capacity - 1;
        // that moment follows from the last admitted call's record.
        let last = calls.iter().rev().find(|r| r.refused.is_none()).unwrap();
        let free_at = last.at
            + Duration::from_secs_f64((last.bucket_after - f64::from(bucket.capacity - 1)) / bucket.leak_per_sec);
        tokio::time::sleep(free_at.saturating_sub(sandbox.clock()) + Duration::from_millis(5)).await;
        let outcome = client.fetch(MALL, ResourceKind::Product, &id, &token).await;
        assert!(matches!(outcome, FetchOutcome::Found(_)), "{outcome:?}");
        // ... and only one: the bucket is full again.
        let outcome = client.fetch(MALL, ResourceKind::Product, &id, &token).await;
        assert!(matches!(outcome, FetchOutcome::Throttled { .. }), "{outcome:?}");
        replay(&sandbox.calls(), bucket);
        assert_eq!(sandbox.counters().refused_bucket, 2);
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn concurrent_callers_get_exactly_what_the_model_allows() {
    let bucket = BucketConfig::default();
    tokio::time::timeout(Duration::from_secs(20), async {
        let (sandbox, client, id, token) = setup(bucket).await;
        let calls = (0..60).map(|_| client.fetch(MALL, ResourceKind::Product, &id, &token));
        let outcomes = futures::future::join_all(calls).await;
        let records = sandbox.calls();
        assert_eq!(records.len(), 60);
        replay(&records, bucket);
        let admitted = outcomes.iter().filter(|o| matches!(o, FetchOutcome::Found(_))).count();
        let refused = outcomes.iter().filter(|o| matches!(o, FetchOutcome::Throttled { .. })).count();
        assert_eq!(admitted + refused, 60);
        assert_eq!(admitted, records.iter().filter(|r| r.refused.is_none()).count());
        // 60 calls take far less than the 10 s it would need to drain 20.
        assert!((40..60).contains(&admitted), "{admitted}");
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn paced_calls_are_never_refused() {
    // 40 at 20/s; 30 calls at 10/s after a burst of 30 stay under the lid.
    let bucket = BucketConfig::new(40, 20.0);
    tokio::time::timeout(Duration::from_secs(20), async {
        let (sandbox, client, id, token) = setup(bucket).await;
        for _ in 0..30 {
            client.fetch(MALL, ResourceKind::Product, &id, &token).await;
        }
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        for _ in 0..30 {
            tick.tick().await;
            client.fetch(MALL, ResourceKind::Product, &id, &token).await;
        }
        let records = sandbox.calls();
        assert!(records.iter().all(|r| r.refused.is_none()), "a paced call was refused");
        replay(&records, bucket);
        let peak = records.iter().map(|r| r.bucket_after).fold(0.0, f64::max);
        assert!(peak <= 40.0 && peak > 20.0, "{peak}");
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn reconfiguring_keeps_the_level() {
    let (sandbox, client, id, token) = setup(BucketConfig::new(5, 0.1)).await;
    for _ in 0..5 {
        client.fetch(MALL, ResourceKind::Product, &id, &token).await;
    }
    sandbox.set_bucket(MALL, BucketConfig::new(8, 0.1)).unwrap();
    assert!(sandbox.bucket_level(MALL).unwrap() > 4.9);
    for _ in 0..3 {
        assert!(matches!(client.fetch(MALL, ResourceKind::Product, &id, &token).await, FetchOutcome::Found(_)));
    }
    assert!(matches!(client.fetch(MALL, ResourceKind::Product, &id, &token).await, FetchOutcome::Throttled { .. }));
    assert!(sandbox.set_bucket(MALL, BucketConfig::new(0, 1.0)).is_err());
    assert!(sandbox.set_bucket("nope", BucketConfig::default()).is_err());
}
