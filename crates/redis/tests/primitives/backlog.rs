//! Flow control per mall against a real redis-server: when webhooks are
//! deferred into the dirty set, how the catch-up chain is carried, and that
//! a resource leaves the set only unchanged since its run read it.

use sluice_redis::{Admit, Backlogs, Chain, ChainNext, Coalescing, FlowControl, Gates, MarkTimes, Tag};
use sluice_testkit::TestRedis;
use std::time::Duration;

type Conn = sluice_redis::Connection;

const TIMES: MarkTimes = MarkTimes { lease: Duration::from_secs(10), pending: Duration::from_secs(900) };
const LEASE: Duration = Duration::from_secs(10);

fn flow(max_queued: u32) -> FlowControl {
    FlowControl { max_queued, events_per_resource: 3, ..FlowControl::default() }
}

async fn backlogs(redis: &TestRedis, flow: FlowControl) -> Backlogs<Conn> {
    Backlogs::new(redis.conn().await, redis.keyspace(), flow).unwrap()
}

fn deferred(admit: &Admit) -> Option<Chain> {
    match admit {
        Admit::Deferred { chain, .. } => Some(*chain),
        Admit::Claim(_) => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_mall_is_deferred_once_it_has_max_queued_messages_and_others_are_not() {
    let redis = TestRedis::new("a_mall_is_deferred_once_it_has_max_queued_messages_and_others_are_not");
    let backlogs = backlogs(&redis, flow(2)).await;
    let (hot, quiet) = (Tag::for_mall("hot"), Tag::for_mall("quiet"));
    for (n, id) in ["ev-1", "ev-2"].iter().enumerate() {
        let admit = backlogs.admit(&hot, &format!("products:{n}"), id, true, TIMES).await.unwrap();
        assert_eq!(admit, Admit::Claim(Coalescing::Owner), "below the threshold a webhook is enqueued as before");
        assert_eq!(backlogs.size(&hot).await.unwrap().queued, n as u64 + 1, "counted as it goes through");
    }
    let first = backlogs.admit(&hot, "products:10", "ev-3", true, TIMES).await.unwrap();
    assert_eq!(deferred(&first), Some(Chain::Took), "the first deferred event starts the chain: {first:?}");
    let second = backlogs.admit(&hot, "products:11", "ev-4", true, TIMES).await.unwrap();
    assert_eq!(deferred(&second), Some(Chain::OthersLease), "an unconfirmed chain is not trusted: {second:?}");
    assert!(backlogs.confirm_chain(&hot, "ev-3").await.unwrap());
    let third = backlogs.admit(&hot, "products:12", "ev-5", true, TIMES).await.unwrap();
    assert_eq!(deferred(&third), Some(Chain::Confirmed), "{third:?}");
    assert_eq!(
        backlogs.admit(&quiet, "products:10", "ev-q", true, TIMES).await.unwrap(),
        Admit::Claim(Coalescing::Owner),
        "another mall is not held back"
    );

    // The backlog stays until the dirty set is empty, even once the queue
    // is below the threshold: the mall leaves flow control only then.
    backlogs.left(&hot, "ev-1").await.unwrap();
    backlogs.left(&hot, "ev-2").await.unwrap();
    let size = backlogs.size(&hot).await.unwrap();
    assert_eq!((size.queued, size.dirty), (0, 3));
    assert!(deferred(&backlogs.admit(&hot, "products:13", "ev-6", true, TIMES).await.unwrap()).is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_pending_fetch_is_still_joined_before_deferring() {
    let redis = TestRedis::new("a_pending_fetch_is_still_joined_before_deferring");
    let backlogs = backlogs(&redis, flow(1)).await;
    let gates = Gates::new(redis.conn().await, redis.keyspace());
    let mall = Tag::for_mall("acme");
    assert_eq!(
        backlogs.admit(&mall, "products:7", "ev-1", true, TIMES).await.unwrap(),
        Admit::Claim(Coalescing::Owner)
    );
    assert!(gates.confirm(&mall, "products:7", "ev-1", TIMES.pending).await.unwrap());
    let joined = backlogs.admit(&mall, "products:7", "ev-2", true, TIMES).await.unwrap();
    assert!(matches!(joined, Admit::Claim(Coalescing::Joined { ref owner, .. }) if owner == "ev-1"), "{joined:?}");
    let own = backlogs.admit(&mall, "products:7", "ev-1", false, TIMES).await.unwrap();
    assert_eq!(own, Admit::Claim(Coalescing::OwnMarkConfirmed));
    assert!(deferred(&backlogs.admit(&mall, "products:8", "ev-3", true, TIMES).await.unwrap()).is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_resource_leaves_the_set_only_unchanged_since_its_run_read_it() {
    let redis = TestRedis::new("a_resource_leaves_the_set_only_unchanged_since_its_run_read_it");
    let backlogs = backlogs(&redis, flow(1)).await;
    let mall = Tag::for_mall("acme");
    count_one(&backlogs, &mall).await;
    for (resource, id) in [("products:1", "ev-1"), ("orders:2", "ev-2"), ("products:1", "ev-3")] {
        assert!(deferred(&backlogs.admit(&mall, resource, id, true, TIMES).await.unwrap()).is_some());
    }
    // A retry of an event already kept adds no second id.
    backlogs.admit(&mall, "products:1", "ev-3", false, TIMES).await.unwrap();

    let read = backlogs.peek(&mall, 10).await.unwrap();
    let names: Vec<&str> = read.iter().map(|r| r.resource.as_str()).collect();
    assert_eq!(names, ["products:1", "orders:2"], "oldest first, once per resource");
    assert_eq!(read[0].events, ["ev-1", "ev-3"]);
    assert!(read[0].since_ms <= read[1].since_ms);

    // A webhook for products:1 arrives while the run fetches it.
    backlogs.admit(&mall, "products:1", "ev-4", true, TIMES).await.unwrap();
    assert_eq!(backlogs.done(&mall, &read).await.unwrap(), 1, "orders:2 left; products:1 changed and stays");
    let left = backlogs.peek(&mall, 10).await.unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].events, ["ev-4"], "only the events the stored snapshot did not answer");
    assert_eq!(left[0].since_ms, read[0].since_ms);
    assert_eq!(backlogs.done(&mall, &left).await.unwrap(), 0);
    assert!(backlogs.peek(&mall, 10).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn event_ids_kept_per_resource_are_capped() {
    let redis = TestRedis::new("event_ids_kept_per_resource_are_capped");
    let backlogs = backlogs(&redis, flow(1)).await;
    let mall = Tag::for_mall("acme");
    count_one(&backlogs, &mall).await;
    for n in 0..5 {
        backlogs.admit(&mall, "products:1", &format!("ev-{n}"), true, TIMES).await.unwrap();
    }
    let read = backlogs.peek(&mall, 1).await.unwrap();
    assert_eq!(read[0].events, ["ev-0", "ev-1", "ev-2"]);
    assert_eq!(read[0].seq, 5, "every webhook still counts as a change");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_chain_is_carried_by_one_run_and_ends_with_the_set() {
    let redis = TestRedis::new("the_chain_is_carried_by_one_run_and_ends_with_the_set");
    let backlogs = backlogs(&redis, flow(1)).await;
    let mall = Tag::for_mall("acme");
    count_one(&backlogs, &mall).await;
    assert_eq!(deferred(&backlogs.admit(&mall, "products:1", "ev-1", true, TIMES).await.unwrap()), Some(Chain::Took));
    assert!(backlogs.confirm_chain(&mall, "ev-1").await.unwrap());

    // A second request (queued by a webhook that found a lease) stops at
    // its end while the confirmed chain goes on.
    assert_eq!(backlogs.next(&mall, "ev-x", LEASE).await.unwrap(), ChainNext::Stop);
    assert_eq!(backlogs.next(&mall, "ev-1", LEASE).await.unwrap(), ChainNext::Continue);
    // While the next request is being queued, a deferred webhook sees a
    // lease and queues its own; the chain's confirm still lands.
    assert_eq!(
        deferred(&backlogs.admit(&mall, "products:2", "ev-2", true, TIMES).await.unwrap()),
        Some(Chain::OthersLease)
    );
    assert!(backlogs.confirm_chain(&mall, "ev-1").await.unwrap());

    let read = backlogs.peek(&mall, 10).await.unwrap();
    assert_eq!(backlogs.done(&mall, &read).await.unwrap(), 0);
    assert_eq!(backlogs.next(&mall, "ev-2", LEASE).await.unwrap(), ChainNext::Idle, "nothing left: ev-2's run ends");
    assert_eq!(backlogs.next(&mall, "ev-1", LEASE).await.unwrap(), ChainNext::Idle);
    // The chain ended with the set: the next deferred webhook starts one.
    assert_eq!(deferred(&backlogs.admit(&mall, "products:3", "ev-3", true, TIMES).await.unwrap()), Some(Chain::Took));
    // Its request could not be queued: the lease goes at once, and the
    // next webhook takes the chain.
    backlogs.release_chain(&mall, "ev-3").await.unwrap();
    assert_eq!(deferred(&backlogs.admit(&mall, "products:4", "ev-4", true, TIMES).await.unwrap()), Some(Chain::Took));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_lease_whose_holder_died_is_carried_by_the_next_run() {
    let redis = TestRedis::new("a_lease_whose_holder_died_is_carried_by_the_next_run");
    let backlogs = backlogs(&redis, flow(1)).await;
    let mall = Tag::for_mall("acme");
    count_one(&backlogs, &mall).await;
    // ev-1 took the lease and died before queueing; ev-2 queued its own.
    assert_eq!(deferred(&backlogs.admit(&mall, "products:1", "ev-1", true, TIMES).await.unwrap()), Some(Chain::Took));
    assert_eq!(
        deferred(&backlogs.admit(&mall, "products:2", "ev-2", true, TIMES).await.unwrap()),
        Some(Chain::OthersLease)
    );
    assert_eq!(backlogs.next(&mall, "ev-2", LEASE).await.unwrap(), ChainNext::Continue);
    assert!(backlogs.confirm_chain(&mall, "ev-2").await.unwrap());
    assert!(!backlogs.confirm_chain(&mall, "ev-1").await.unwrap(), "the dead holder's late confirm changes nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_counted_message_stops_counting_after_the_horizon() {
    let redis = TestRedis::new("a_counted_message_stops_counting_after_the_horizon");
    let flow = FlowControl { queued_horizon: Duration::from_millis(300), ..flow(2) };
    let backlogs = backlogs(&redis, flow).await;
    let mall = Tag::for_mall("acme");
    let mut conn = redis.conn().await;
    let started = redis_ms(&mut conn).await;
    // ev-0's step dies without leaving. ev-1, counted later, keeps the set
    // alive (its TTL runs from the latest change): ev-0 must go by its age.
    count_one(&backlogs, &mall).await;
    wait_until(&mut conn, started + 200).await;
    let through = backlogs.admit(&mall, "products:1", "ev-1", true, TIMES).await.unwrap();
    assert_eq!(through, Admit::Claim(Coalescing::Owner));
    wait_until(&mut conn, started + 400).await;
    assert_eq!(backlogs.size(&mall).await.unwrap().queued, 2, "ev-0 is still in the set");
    assert_eq!(
        backlogs.admit(&mall, "products:2", "ev-2", true, TIMES).await.unwrap(),
        Admit::Claim(Coalescing::Owner),
        "ev-0 no longer counts, so the mall is below its threshold"
    );
    assert_eq!(backlogs.size(&mall).await.unwrap().queued, 2, "ev-1 and ev-2");
}

/// Lets one event (`ev-0`, `products:0`) through to the queue: counted.
async fn count_one(backlogs: &Backlogs<Conn>, mall: &Tag) {
    let admit = backlogs.admit(mall, "products:0", "ev-0", true, TIMES).await.unwrap();
    assert_eq!(admit, Admit::Claim(Coalescing::Owner));
}

async fn wait_until(conn: &mut Conn, ms: u64) {
    while redis_ms(conn).await < ms {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Redis's clock, which the scripts read.
async fn redis_ms(conn: &mut Conn) -> u64 {
    let (s, us): (u64, u64) = redis::cmd("TIME").query_async(conn).await.unwrap();
    s * 1000 + us / 1000
}
