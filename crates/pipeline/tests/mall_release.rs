//! Parked malls, as the upstream chaos test found them wanting:
//!
//! - a release against a Cafe24 that fails now and then (its 20% 5xx): a
//!   held event whose fetch fails is fetched again within the catch-up run,
//!   so one 5xx does not put every event behind it off by the failure
//!   backoff (5 s a failure, 30 s for a release of 15 events there);
//! - a mall that never had a token, and a mall whose calls Cafe24 refuses
//!   with 403, are parked with their events held, not failed into the
//!   dead-letter queue (where `sluice tokens set` would not find them),
//!   and a new token releases them.

use sluice_domain::{CatchUpRequest, CatchUpRequests, ResourceKind};
use sluice_pipeline::step_io::{FetchInput, FetchNext, TokenInput};
use sluice_pipeline::{CatchUpService, NextRun, PipelineConfig, ServiceCore, ShopService};
use sluice_redis::{Admit, Backlogs, Chain, FlowControl, MarkTimes, ParkedMalls, Tag};
use sluice_sandbox::{Cafe24Sandbox, Cafe24SandboxConfig, Fault, FaultConfig, fault::FaultInjector};
use sluice_testkit::TestRedis;
use sluice_testkit::pipeline::{item_plan, sandbox_token};
use sluice_testkit::sandbox::cafe24_client;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const MALL: &str = "flaky";
const HELD: usize = 3;

/// The catch-up requests the service queued.
#[derive(Debug, Default)]
struct Recorded(Mutex<Vec<CatchUpRequest>>);

impl CatchUpRequests for Recorded {
    fn request(&self, request: &CatchUpRequest, _: Duration) -> sluice_domain::catch_up::Pending<'_> {
        self.0.lock().unwrap().push(request.clone());
        Box::pin(async { Ok(()) })
    }
}

/// A seed whose plan fails the first call with a 5xx and answers the
/// `HELD` after it: one failure, at the first held event.
fn one_failure_first(rate: f64) -> u64 {
    (1..10_000)
        .find(|&seed| {
            let mut plan = FaultInjector::new(FaultConfig { server_error_rate: rate, seed, ..FaultConfig::default() })
                .expect("a valid plan");
            let faults: Vec<_> = (0..=HELD).map(|_| plan.decide().fault).collect();
            faults[0] == Some(Fault::ServerError) && faults[1..].iter().all(Option::is_none)
        })
        .expect("such a seed")
}

#[tokio::test]
async fn a_release_fetches_a_failed_held_event_again_in_the_run_instead_of_putting_the_rest_off() {
    tokio::time::timeout(Duration::from_secs(30), async {
        let redis = TestRedis::new("release_retries");
        let config = Cafe24SandboxConfig::with_malls([MALL]);
        let sandbox = Cafe24Sandbox::start(config).await.unwrap();
        let core = ServiceCore::new(redis.conn().await, redis.keyspace(), PipelineConfig::default());
        let shop = ShopService::new(core, cafe24_client(&sandbox)).unwrap();

        // The mall's grant is revoked: its events are held.
        let mut expired = sandbox_token(&sandbox, MALL);
        expired.access_expires_ms = sluice_testkit::now_ms() - 1;
        shop.set_token(MALL, &expired).await.unwrap();
        sandbox.expire_refresh_token(MALL).unwrap();
        for n in 0..HELD {
            let id = sandbox.create(MALL, ResourceKind::Product, serde_json::Map::new()).await.unwrap().id;
            let item = item_plan(MALL, &id, &format!("held-{n}"), 1);
            let output = shop.ensure_token(TokenInput { item, stale_token: None, rejected: false }).await.unwrap();
            assert!(output.held, "{output:?}");
        }

        // `sluice tokens set`, then Cafe24 fails the first fetch.
        let recorded = Arc::new(Recorded::default());
        let drain = CatchUpService::new(shop.clone(), recorded.clone());
        assert!(drain.set_token(MALL, &sandbox_token(&sandbox, MALL)).await.unwrap(), "the mall was parked");
        let request = recorded.0.lock().unwrap().pop().expect("a release run queued");
        let rate = 0.5;
        sandbox
            .set_faults(FaultConfig {
                server_error_rate: rate,
                seed: one_failure_first(rate),
                ..FaultConfig::default()
            })
            .unwrap();
        let output = drain.catch_up(request).await.unwrap();

        let counters = sandbox.counters();
        assert_eq!((counters.server_errors, counters.ok), (1, HELD as u64), "one failure, then each held event once");
        let holds = ParkedMalls::new(redis.conn().await, redis.keyspace());
        assert_eq!(holds.state(&Tag::for_mall(MALL)).await.unwrap(), None, "one run released every held event");
        assert_eq!(output.next, NextRun::Idle, "{output:?}");
        assert!(recorded.0.lock().unwrap().is_empty(), "no later run was needed");
        sandbox.stop().await;
    })
    .await
    .unwrap();
}

/// Redis, the sandbox with `MALL` and a product, the shop steps, and a
/// drain service recording its requests.
async fn setup(name: &str) -> (TestRedis, Cafe24Sandbox, ShopService<sluice_redis::Connection>, String) {
    let redis = TestRedis::new(name);
    let sandbox = Cafe24Sandbox::start(Cafe24SandboxConfig::with_malls([MALL])).await.unwrap();
    let core = ServiceCore::new(redis.conn().await, redis.keyspace(), PipelineConfig::default());
    let shop = ShopService::new(core, cafe24_client(&sandbox)).unwrap();
    let id = sandbox.create(MALL, ResourceKind::Product, serde_json::Map::new()).await.unwrap().id;
    (redis, sandbox, shop, id)
}

/// `sluice tokens set` for the parked `MALL`, then the release run it
/// queues: every held event stored, the parking ended.
async fn release(redis: &TestRedis, sandbox: &Cafe24Sandbox, shop: &ShopService<sluice_redis::Connection>) {
    let recorded = Arc::new(Recorded::default());
    let drain = CatchUpService::new(shop.clone(), recorded.clone());
    assert!(drain.set_token(MALL, &sandbox_token(sandbox, MALL)).await.unwrap(), "the mall was parked");
    let request = recorded.0.lock().unwrap().pop().expect("a release run queued");
    let output = drain.catch_up(request).await.unwrap();
    assert_eq!(output.next, NextRun::Idle, "{output:?}");
    let holds = ParkedMalls::new(redis.conn().await, redis.keyspace());
    assert_eq!(holds.state(&Tag::for_mall(MALL)).await.unwrap(), None, "released");
}

/// `MALL`'s products `ids` in its dirty set, as ingest defers webhooks
/// past its threshold (one message counted in the queue), the catch-up
/// chain taken by the first (`ev-1`) and confirmed.
async fn dirty_set(redis: &TestRedis, ids: &[String]) -> (Backlogs<sluice_redis::Connection>, Tag) {
    let flow = FlowControl { max_queued: 1, ..FlowControl::default() };
    let backlogs = Backlogs::new(redis.conn().await, redis.keyspace(), flow).unwrap();
    let (tag, times) =
        (Tag::for_mall(MALL), MarkTimes { lease: Duration::from_secs(10), pending: Duration::from_secs(900) });
    backlogs.admit(&tag, "product:0", "ev-0", true, times).await.unwrap();
    for (n, id) in ids.iter().enumerate() {
        let deferred = backlogs.admit(&tag, &format!("product:{id}"), &format!("ev-{}", n + 1), true, times).await;
        let deferred = deferred.unwrap();
        // The first deferred webhook takes the chain; the rest join it.
        assert!(
            matches!(deferred, Admit::Deferred { chain, .. } if (chain == Chain::Took) == (n == 0)),
            "{deferred:?}"
        );
    }
    assert!(backlogs.confirm_chain(&tag, "ev-1").await.unwrap());
    (backlogs, tag)
}

async fn parked_reason(redis: &TestRedis) -> String {
    let held = ParkedMalls::new(redis.conn().await, redis.keyspace()).state(&Tag::for_mall(MALL)).await.unwrap();
    let held = held.expect("the mall is parked");
    assert!(held.parked && held.held == 1, "{held:?}");
    held.reason
}

#[tokio::test]
async fn a_mall_that_never_had_a_token_is_parked_with_its_event_held_until_tokens_set() {
    tokio::time::timeout(Duration::from_secs(30), async {
        let (redis, sandbox, shop, id) = setup("never_had_a_token").await;
        let item = item_plan(MALL, &id, "early", 1);
        let output = shop.ensure_token(TokenInput { item, stale_token: None, rejected: false }).await.unwrap();
        assert!(output.held, "held, not failed toward the dead-letter queue: {output:?}");
        assert!(parked_reason(&redis).await.contains("no Cafe24 token"));
        assert!(sandbox.calls().is_empty(), "no call without a token");
        release(&redis, &sandbox, &shop).await;
        assert_eq!(sandbox.counters().ok, 1, "the held event was fetched");
        sandbox.stop().await;
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_403_from_cafe24_parks_the_mall_with_the_event_held_until_a_new_grant() {
    tokio::time::timeout(Duration::from_secs(30), async {
        let (redis, sandbox, shop, id) = setup("forbidden_fetch").await;
        shop.set_token(MALL, &sandbox_token(&sandbox, MALL)).await.unwrap();
        sandbox.forbid(MALL).unwrap();
        let fetched = shop.fetch(FetchInput::new(item_plan(MALL, &id, "refused", 1))).await.unwrap();
        assert_eq!(fetched.outcome, FetchNext::Held, "held, not failed toward the dead-letter queue");
        assert!(parked_reason(&redis).await.contains("403"));
        // A later event waits behind it without a call.
        let calls = sandbox.calls().len();
        let later = TokenInput { item: item_plan(MALL, &id, "later", 1), stale_token: None, rejected: false };
        assert!(shop.ensure_token(later).await.unwrap().held);
        assert_eq!(sandbox.calls().len(), calls);
        release(&redis, &sandbox, &shop).await;
        assert_eq!(sandbox.counters().ok, 2, "both events fetched once the shop granted access again");
        sandbox.stop().await;
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_403_in_a_flow_control_drain_run_parks_the_mall_instead_of_calling_again_and_again() {
    tokio::time::timeout(Duration::from_secs(30), async {
        let (redis, sandbox, shop, id) = setup("forbidden_drain").await;
        shop.set_token(MALL, &sandbox_token(&sandbox, MALL)).await.unwrap();
        let (backlogs, tag) = dirty_set(&redis, &[id]).await;
        sandbox.forbid(MALL).unwrap();

        let recorded = Arc::new(Recorded::default());
        let drain = CatchUpService::new(shop.clone(), recorded.clone());
        drain.catch_up(CatchUpRequest::new(MALL, "ev-1")).await.unwrap();
        let held = ParkedMalls::new(redis.conn().await, redis.keyspace()).state(&tag).await.unwrap();
        assert!(held.as_ref().is_some_and(|h| h.parked && h.reason.contains("403")), "{held:?}");
        let calls = sandbox.calls().len();
        let output = drain.catch_up(CatchUpRequest::new(MALL, "ev-1")).await.unwrap();
        assert_eq!(output.next, NextRun::Parked, "{output:?}");
        assert_eq!(sandbox.calls().len(), calls, "a parked mall's run makes no call");
        assert_eq!(backlogs.size(&tag).await.unwrap().dirty, 1, "the product waits for a new grant");
        sandbox.stop().await;
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_403_mid_run_stops_the_catch_up_from_calling_for_the_rest_of_the_dirty_set() {
    tokio::time::timeout(Duration::from_secs(30), async {
        let redis = TestRedis::new("forbidden_mid_run");
        let sandbox = Cafe24Sandbox::start(Cafe24SandboxConfig::with_malls([MALL])).await.unwrap();
        // One fetch at a time, so each call starts after the last answer.
        let mut config = PipelineConfig::default();
        config.catch_up.fetch_concurrency = 1;
        let core = ServiceCore::new(redis.conn().await, redis.keyspace(), config);
        let shop = ShopService::new(core, cafe24_client(&sandbox)).unwrap();
        shop.set_token(MALL, &sandbox_token(&sandbox, MALL)).await.unwrap();
        let mut ids = Vec::new();
        for _ in 0..5 {
            ids.push(sandbox.create(MALL, ResourceKind::Product, serde_json::Map::new()).await.unwrap().id);
        }
        let (backlogs, tag) = dirty_set(&redis, &ids).await;
        assert_eq!(backlogs.size(&tag).await.unwrap().dirty, 5);
        sandbox.forbid(MALL).unwrap();

        let calls = sandbox.calls().len();
        let drain = CatchUpService::new(shop.clone(), Arc::new(Recorded::default()));
        let output = drain.catch_up(CatchUpRequest::new(MALL, "ev-1")).await.unwrap();
        assert_eq!(output.next, NextRun::Parked, "{output:?}");
        assert_eq!(sandbox.calls().len() - calls, 1, "one refused call, none for the other four products");
        assert_eq!(output.left, 5, "every product waits for a new grant");
        sandbox.stop().await;
    })
    .await
    .unwrap();
}
