//! The catch-up Lambda's handler, called as the runtime calls it with an
//! SQS event, against a real Redis and the sandbox Cafe24.

use sluice_lambda_harness as harness;

use aws_lambda_events::sqs::SqsEvent;
use harness::Harness;
use lambda_runtime::LambdaEvent;
use sluice_domain::{CatchUpRequest, CatchUpRequests};
use sluice_fn_catch_up::handler;
use sluice_pipeline::CatchUpService;
use sluice_pipeline::NextRun;
use sluice_redis::{Admit, Backlogs, Chain, FlowControl, MarkTimes, ParkedMalls, Tag};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn sqs_event(records: &[(&str, &str)]) -> LambdaEvent<SqsEvent> {
    harness::sqs_event("sluice-mall-drain", records)
}

/// The next requests the runs queued.
#[derive(Debug, Default)]
struct Recorded(Mutex<Vec<(CatchUpRequest, Duration)>>);

impl CatchUpRequests for Recorded {
    fn request(&self, request: &CatchUpRequest, delay: Duration) -> sluice_domain::catch_up::Pending<'_> {
        self.0.lock().unwrap().push((request.clone(), delay));
        Box::pin(async { Ok(()) })
    }
}

#[tokio::test]
async fn a_deferred_product_is_fetched_and_stored_its_chain_ends_and_a_bad_body_is_reported_failed() {
    let h = Harness::start("fn_catch_up", &["acme"]).await;
    h.seed_token("acme").await;
    let (first, _) = h.product("acme").await;
    let (second, _) = h.product("acme").await;
    // One message counted in the queue is the threshold here: the second
    // product's webhook goes to the mall's dirty set, as ingest's claim does.
    let flow = FlowControl { max_queued: 1, ..FlowControl::default() };
    let backlogs = Backlogs::new(h.redis.conn().await, h.redis.keyspace(), flow).unwrap();
    let tag = Tag::for_mall("acme");
    let times = MarkTimes { lease: Duration::from_secs(10), pending: Duration::from_secs(900) };
    let queued = backlogs.admit(&tag, &format!("product:{first}"), "ev-1", true, times).await.unwrap();
    assert!(matches!(queued, Admit::Claim(_)), "{queued:?}");
    let deferred = backlogs.admit(&tag, &format!("product:{second}"), "ev-2", true, times).await.unwrap();
    assert!(matches!(deferred, Admit::Deferred { chain: Chain::Took, .. }), "{deferred:?}");
    assert!(backlogs.confirm_chain(&tag, "ev-2").await.unwrap());

    let recorded = Arc::new(Recorded::default());
    let drain = CatchUpService::new(h.shop.clone(), recorded.clone());
    let request = CatchUpRequest::new("acme", "ev-2").to_body();
    let response = handler(&drain, sqs_event(&[("m1", &request), ("m2", "not a request")])).await.unwrap();

    let failed: Vec<_> = response.batch_item_failures.iter().map(|f| f.item_identifier.clone()).collect();
    assert_eq!(failed, ["m2"]);
    assert_eq!(backlogs.size(&tag).await.unwrap().dirty, 0, "the stored product left the dirty set");
    assert!(h.stages("ev-2").await.contains(&"fetch".to_owned()), "{:?}", h.stages("ev-2").await);
    assert!(recorded.0.lock().unwrap().is_empty(), "the set is empty: the chain ends, no next request");
    h.stop().await;
}

#[tokio::test]
async fn a_revoked_mall_parks_its_run_without_failing_and_a_new_token_releases_it() {
    let h = Harness::start("fn_catch_up_parked", &["acme"]).await;
    h.seed_token("acme").await;
    let (product, _) = h.product("acme").await;
    let flow = FlowControl { max_queued: 1, ..FlowControl::default() };
    let backlogs = Backlogs::new(h.redis.conn().await, h.redis.keyspace(), flow).unwrap();
    let tag = Tag::for_mall("acme");
    let times = MarkTimes { lease: Duration::from_secs(10), pending: Duration::from_secs(900) };
    backlogs.admit(&tag, "product:0", "ev-0", true, times).await.unwrap();
    let deferred = backlogs.admit(&tag, &format!("product:{product}"), "ev-1", true, times).await.unwrap();
    assert!(matches!(deferred, Admit::Deferred { chain: Chain::Took, .. }), "{deferred:?}");
    assert!(backlogs.confirm_chain(&tag, "ev-1").await.unwrap());
    // Cafe24 revokes the mall's grant.
    h.sandbox.expire_access_tokens("acme").unwrap();
    h.sandbox.expire_refresh_token("acme").unwrap();

    let recorded = Arc::new(Recorded::default());
    let drain = CatchUpService::new(h.shop.clone(), recorded.clone());
    let request = CatchUpRequest::new("acme", "ev-1").to_body();
    let response = handler(&drain, sqs_event(&[("m1", &request)])).await.unwrap();
    assert!(response.batch_item_failures.is_empty(), "a parked mall's run does not fail (no DLQ)");
    let holds = ParkedMalls::new(h.redis.conn().await, h.redis.keyspace());
    assert!(holds.state(&tag).await.unwrap().is_some_and(|s| s.parked), "the refused refresh parked the mall");
    assert_eq!(backlogs.size(&tag).await.unwrap().dirty, 1, "the deferred product waits");
    assert!(recorded.0.lock().unwrap().is_empty(), "no next run while parked");
    // Another run while parked stops before any call.
    let calls = h.sandbox.calls().len();
    let output = drain.catch_up(CatchUpRequest::new("acme", "ev-1")).await.unwrap();
    assert_eq!((output.next, output.left), (NextRun::Parked, 1));
    assert_eq!(h.sandbox.calls().len(), calls, "a parked mall is not called");

    // `sluice tokens set`: the release is queued; its run stores the product.
    assert!(drain.set_token("acme", &h.fresh_token("acme")).await.unwrap());
    let queued = recorded.0.lock().unwrap().clone();
    assert_eq!(queued.len(), 1, "{queued:?}");
    let output = drain.catch_up(queued[0].0.clone()).await.unwrap();
    assert_eq!((output.stored, output.next), (1, NextRun::Idle), "{output:?}");
    assert_eq!(holds.state(&tag).await.unwrap(), None, "the hold ended");
    assert_eq!(backlogs.size(&tag).await.unwrap().dirty, 0);
    h.stop().await;
}
