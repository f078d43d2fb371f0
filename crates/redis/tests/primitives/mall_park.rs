//! A parked mall's held events and the episodes behind alerts, against a
//! real redis-server: the order events are held and released in, that a
//! redelivered event keeps its place, that the parking ends exactly when the
//! last held event is released, and that an episode starts and ends once.

use sluice_redis::{Backlogs, ChainNext, EpisodeChange, EpisodeRule, Episodes, FlowControl, ParkedMalls, Tag};
use sluice_testkit::TestRedis;
use std::time::Duration;

type Conn = sluice_redis::Connection;

async fn holds(redis: &TestRedis) -> ParkedMalls<Conn> {
    ParkedMalls::new(redis.conn().await, redis.keyspace())
}

#[tokio::test]
async fn a_parked_mall_holds_its_events_in_arrival_order_until_released() {
    let redis = TestRedis::new("a_parked_mall_holds_its_events_in_arrival_order_until_released");
    let holds = holds(&redis).await;
    let (mall, other) = (Tag::for_mall("m"), Tag::for_mall("other"));
    assert!(!holds.check(&mall, "e0", "{}").await.unwrap().held, "an unparked mall holds nothing");
    let parked = holds.park(&mall, "invalid_grant", Some(("e1", "item-1"))).await.unwrap();
    assert!(parked.held && parked.newly_parked && parked.count == 1, "{parked:?}");
    for id in ["e2", "e3"] {
        let hold = holds.check(&mall, id, &format!("item-{id}")).await.unwrap();
        assert!(hold.held && !hold.newly_parked, "{hold:?}");
    }
    // A redelivered message keeps its first place; parking again is no new episode.
    let again = holds.park(&mall, "invalid_grant", Some(("e1", "item-1"))).await.unwrap();
    assert!(again.held && !again.newly_parked && again.count == 3, "{again:?}");
    assert!(!holds.check(&other, "x", "{}").await.unwrap().held, "another mall is not held");
    let state = holds.state(&mall).await.unwrap().unwrap();
    assert!(state.parked && state.held == 3 && state.reason == "invalid_grant" && state.since_ms > 0, "{state:?}");

    // Parked: nothing may go until the release.
    let oldest = holds.oldest(&mall).await.unwrap().unwrap();
    assert_eq!((oldest.event_id.as_str(), oldest.item.as_str()), ("e1", "item-1"));
    assert!(holds.release(&mall).await.unwrap(), "a held mall is released");
    assert!(!holds.release(&other).await.unwrap(), "a mall that was never held is not");
    let mut released = Vec::new();
    while let Some(event) = holds.oldest(&mall).await.unwrap() {
        // An event arriving during the release waits behind the held ones.
        if event.event_id == "e2" {
            assert!(holds.check(&mall, "e4", "item-e4").await.unwrap().held);
        }
        let (_, ended) = holds.done(&mall, Some(&event.event_id)).await.unwrap();
        released.push(event.event_id);
        assert_eq!(ended, holds.oldest(&mall).await.unwrap().is_none(), "the parking ends with the last event");
    }
    assert_eq!(released, ["e1", "e2", "e3", "e4"]);
    assert_eq!(holds.state(&mall).await.unwrap(), None, "the parking ended");
    assert!(!holds.check(&mall, "e5", "{}").await.unwrap().held, "after the release events go through");
    let keys: Vec<String> = redis.keys().await.into_iter().filter(|k| k.contains("{mall:m}")).collect();
    assert!(keys.is_empty(), "the parking leaves no key behind: {keys:?}");
}

#[tokio::test]
async fn a_parked_release_keeps_the_hold_and_parking_during_a_release_stops_it() {
    let redis = TestRedis::new("a_parked_release_keeps_the_hold_and_parking_during_a_release_stops_it");
    let holds = holds(&redis).await;
    let mall = Tag::for_mall("m");
    // Parked by a catch-up run, with nothing held: the release still has an end.
    assert!(holds.park(&mall, "no token", None).await.unwrap().newly_parked);
    assert_eq!(holds.done(&mall, None).await.unwrap(), (0, false), "parked: the parking does not end");
    holds.release(&mall).await.unwrap();
    holds.park(&mall, "refused again", Some(("e1", "i"))).await.unwrap();
    assert!(holds.state(&mall).await.unwrap().unwrap().parked, "parked again during the release");
    assert_eq!(holds.done(&mall, Some("e1")).await.unwrap(), (0, false), "a parked hold outlives its events");
    holds.release(&mall).await.unwrap();
    assert_eq!(holds.done(&mall, None).await.unwrap(), (0, true), "released with nothing held: it ends");
}

#[tokio::test]
async fn held_events_keep_the_catch_up_chain_going() {
    let redis = TestRedis::new("held_events_keep_the_catch_up_chain_going");
    let holds = holds(&redis).await;
    let backlogs = Backlogs::new(redis.conn().await, redis.keyspace(), FlowControl::default()).unwrap();
    let mall = Tag::for_mall("m");
    let lease = Duration::from_secs(10);
    assert_eq!(backlogs.next(&mall, "t1", lease).await.unwrap(), ChainNext::Idle);
    holds.park(&mall, "x", Some(("e1", "i"))).await.unwrap();
    backlogs.take_chain(&mall, "t2", lease).await.unwrap();
    assert!(backlogs.confirm_chain(&mall, "t2").await.unwrap());
    assert_eq!(backlogs.next(&mall, "t2", lease).await.unwrap(), ChainNext::Continue, "held events left");
    assert!(backlogs.confirm_chain(&mall, "t2").await.unwrap());
    assert_eq!(backlogs.next(&mall, "t1", lease).await.unwrap(), ChainNext::Stop, "the taken chain is t2's");
}

fn rule(threshold: u32) -> EpisodeRule {
    EpisodeRule { name: "fetch", threshold, ttl: Duration::from_secs(60) }
}

#[tokio::test]
async fn an_episode_starts_at_the_threshold_and_ends_at_the_next_success_once_each() {
    let redis = TestRedis::new("an_episode_starts_at_the_threshold_and_ends_at_the_next_success_once_each");
    let episodes = Episodes::new(redis.conn().await, redis.keyspace());
    let tag = Tag::for_mall("m");
    let rule = rule(3);
    assert_eq!(episodes.succeeded(&tag, &rule).await.unwrap(), EpisodeChange::None, "no episode, nothing ends");
    // Two failures, then a success: the streak starts over.
    for _ in 0..2 {
        assert_eq!(episodes.failed(&tag, &rule).await.unwrap(), EpisodeChange::None);
    }
    assert_eq!(episodes.succeeded(&tag, &rule).await.unwrap(), EpisodeChange::None);
    let changes: Vec<EpisodeChange> = {
        let mut out = Vec::new();
        for _ in 0..6 {
            out.push(episodes.failed(&tag, &rule).await.unwrap());
        }
        out
    };
    use EpisodeChange::{Ended, None, Started};
    assert_eq!(changes, [None, None, Started, None, None, None], "the third failure in a row starts it, once");
    assert_eq!(episodes.failed(&Tag::for_mall("other"), &rule).await.unwrap(), None, "episodes are per tag");
    assert_eq!(episodes.succeeded(&tag, &rule).await.unwrap(), Ended);
    assert_eq!(episodes.succeeded(&tag, &rule).await.unwrap(), None, "it ended once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_failures_start_one_episode() {
    let redis = TestRedis::new("concurrent_failures_start_one_episode");
    let episodes = Episodes::new(redis.conn().await, redis.keyspace());
    let tag = Tag::for_mall("m");
    let tasks: Vec<_> = (0..40)
        .map(|_| {
            let (episodes, tag) = (episodes.clone(), tag.clone());
            tokio::spawn(async move { episodes.failed(&tag, &rule(5)).await.unwrap() })
        })
        .collect();
    let mut started = 0;
    for task in tasks {
        if task.await.unwrap() == EpisodeChange::Started {
            started += 1;
        }
    }
    assert_eq!(started, 1);
}
