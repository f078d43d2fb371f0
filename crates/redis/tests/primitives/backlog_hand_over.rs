//! A fetch handed over to its mall's drain (`Backlogs::hand_over`) against
//! a real redis-server: the resource joins the dirty set with every event
//! the fetch answers, the owner's message stops counting, the chain is
//! taken once, and the mall's next webhooks are deferred behind it.

use sluice_redis::{Admit, Backlogs, Chain, Coalescing, FlowControl, MarkTimes, Tag};
use sluice_testkit::TestRedis;
use std::time::Duration;

const TIMES: MarkTimes = MarkTimes { lease: Duration::from_secs(10), pending: Duration::from_secs(900) };
const LEASE: Duration = Duration::from_secs(10);

fn ids(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_handed_over_fetch_joins_the_dirty_set_with_its_events_and_stops_counting() {
    let redis = TestRedis::new("a_handed_over_fetch_joins_the_dirty_set_with_its_events_and_stops_counting");
    let flow = FlowControl { max_queued: 10, events_per_resource: 3, ..FlowControl::default() };
    let backlogs = Backlogs::new(redis.conn().await, redis.keyspace(), flow).unwrap();
    let mall = Tag::for_mall("m");
    // Let through (counted) while the mall had no backlog.
    let admit = backlogs.admit(&mall, "products:1", "ev-1", true, TIMES).await.unwrap();
    assert_eq!(admit, Admit::Claim(Coalescing::Owner));
    assert_eq!(backlogs.size(&mall).await.unwrap().queued, 1);
    assert!(!backlogs.in_backlog(&mall).await.unwrap(), "1 of 10 counted, nothing dirty: not under flow control");

    let (chain, since) = backlogs.hand_over(&mall, "products:1", "ev-1", &ids(&["ev-1", "ev-2"]), LEASE).await.unwrap();
    assert_eq!(chain, Chain::Took, "no chain yet: the hand-over takes its lease");
    assert!(since > 0);
    let size = backlogs.size(&mall).await.unwrap();
    assert_eq!((size.queued, size.dirty), (0, 1), "its message no longer counts; the resource is dirty");
    assert!(backlogs.in_backlog(&mall).await.unwrap(), "a dirty resource puts the mall under flow control");
    let dirty = backlogs.peek(&mall, 10).await.unwrap();
    assert_eq!(dirty.len(), 1);
    assert_eq!(dirty[0].resource, "products:1");
    assert_eq!(dirty[0].events, ids(&["ev-1", "ev-2"]), "the coalesced event is answered by the drain too");
    assert_eq!(dirty[0].since_ms, since);

    // A redelivered fetch hands over again: no event twice, the entry is
    // marked changed (a run that read it before keeps it), the cap holds.
    let answers = ids(&["ev-1", "ev-2", "ev-3", "ev-4"]);
    let (chain, since_again) = backlogs.hand_over(&mall, "products:1", "ev-1", &answers, LEASE).await.unwrap();
    assert_eq!(chain, Chain::OthersLease, "its own lease is not yet confirmed");
    assert_eq!(since_again, since, "dirty since the first time");
    let entry = &backlogs.peek(&mall, 10).await.unwrap()[0];
    assert_eq!(entry.events, ids(&["ev-1", "ev-2", "ev-3"]), "capped at events_per_resource");
    assert_eq!(entry.seq, dirty[0].seq + 1);

    assert!(backlogs.confirm_chain(&mall, "ev-1").await.unwrap());
    let (chain, _) = backlogs.hand_over(&mall, "products:2", "ev-9", &ids(&["ev-9"]), LEASE).await.unwrap();
    assert_eq!(chain, Chain::Confirmed, "a confirmed chain's next run sees it");
    // The mall has a backlog now: its next webhook is deferred, not queued.
    let next = backlogs.admit(&mall, "products:3", "ev-10", true, TIMES).await.unwrap();
    assert!(matches!(next, Admit::Deferred { chain: Chain::Confirmed, .. }), "{next:?}");
    // Another mall is untouched.
    let other = backlogs.admit(&Tag::for_mall("other"), "products:1", "ev-o", true, TIMES).await.unwrap();
    assert_eq!(other, Admit::Claim(Coalescing::Owner));
}
