//! The crash test of ingest acceptance, shared by every front that runs the
//! acceptor (`sluice dev`'s HTTP server, the ingest Lambda's handler).
//!
//! For every Redis command an acceptance makes, and for each side of it,
//! one webhook's acceptance is killed there ([`CrashPlan`]). Then, as a
//! sender and the pipeline would: later webhooks for the same product
//! arrive; the queue is drained and each message's fetch is emulated the
//! way the fetch step starts (`Gates::take`: the message answers itself and
//! every event that joined its mark), and each of them must be answered
//! even if the killed delivery is never retried; the killed delivery is then retried with
//! its X-Trace-ID while it is answered 5xx (its lease holds it); more
//! webhooks; a last drain. Every webhook answered 202 must have been
//! answered by a fetch, and no event may be left waiting in a mark's
//! joiners with no message to take them.

use crate::TestRedis;
use crate::crash_point::{CrashPlan, Side};
use serde_json::Value;
use sluice_redis::Connection;
use sluice_redis::{Gates, Tag};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// An answer as the sender sees it.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub body: Value,
}

/// The ingest under test, as a sender and the queue's consumer see it.
#[allow(async_fn_in_trait)]
pub trait Front {
    /// Posts a product webhook of `mall` with this X-Trace-ID.
    async fn post(&self, mall: &str, product_no: u64, trace: &str) -> Answer;
    /// Takes every message now in the queue, in order: their event ids
    /// (the deduplication ids).
    async fn drain(&self) -> Vec<String>;
}

/// What one crash point did.
#[derive(Debug, Clone)]
pub struct PointOutcome {
    pub command: usize,
    pub side: Side,
    pub what: String,
    /// The killed request's answer, and its retry's final one.
    pub killed: u16,
    pub retry: String,
    pub accepted: usize,
}

/// Runs every crash point against `front`, whose Redis connection crashes
/// where `plan` says; `redis` is the same server and keyspace. Panics
/// naming the crash point when an accepted event is lost.
pub async fn every_crash_point<F: Front>(front: &F, plan: &CrashPlan, redis: &TestRedis) -> Vec<PointOutcome> {
    quiet_simulated_crashes();
    let gates = Gates::new(redis.conn().await, redis.keyspace());
    let mall = "acme";
    // Load every script first, so each acceptance makes the same commands.
    accepted_id(&front.post(mall, 1, "warm-up").await);
    fetch_all(front, &gates, &mut BTreeSet::new()).await;
    plan.count();
    accepted_id(&front.post(mall, 2, "counted").await);
    let commands = plan.seen();
    fetch_all(front, &gates, &mut BTreeSet::new()).await;
    assert!(commands >= 3, "an acceptance makes {commands} Redis commands?");

    let mut outcomes = Vec::new();
    for command in 0..commands {
        for side in [Side::Before, Side::After] {
            let product = 100 + outcomes.len() as u64;
            outcomes.push(one_point(front, plan, &gates, redis, mall, product, command, side).await);
        }
    }
    outcomes
}

#[allow(clippy::too_many_arguments)]
async fn one_point<F: Front>(
    front: &F,
    plan: &CrashPlan,
    gates: &Gates<Connection>,
    redis: &TestRedis,
    mall: &str,
    product: u64,
    command: usize,
    side: Side,
) -> PointOutcome {
    let place = format!("crash {side:?} command {command}");
    plan.arm(command, side);
    let killed = front.post(mall, product, "killed").await;
    assert!(plan.fired(), "{place}: the acceptance made fewer commands than counted");
    let what = plan.what();
    plan.count();
    assert!(killed.status >= 500, "{place} ({what}): a killed acceptance answered {killed:?}");

    let mut accepted = Vec::new();
    let mut answered = BTreeSet::new();
    for trace in ["later-1", "later-2"] {
        accept_or_5xx(&front.post(mall, product, trace).await, &mut accepted, &place);
    }
    // The pipeline may fetch before the sender retries.
    fetch_all(front, gates, &mut answered).await;
    accept_or_5xx(&front.post(mall, product, "later-3").await, &mut accepted, &place);
    fetch_all(front, gates, &mut answered).await;
    // A sender may also give up on the killed delivery: the later
    // webhooks must not depend on its retry.
    for id in &accepted {
        assert!(
            answered.contains(id),
            "{place} ({what}): {id} was answered 202 but only the killed delivery's retry could answer it"
        );
    }

    // The sender retries the killed delivery while it is answered 5xx
    // (held by the killed attempt's lease, or anything else).
    let deadline = Instant::now() + Duration::from_secs(10);
    let retry = loop {
        let answer = front.post(mall, product, "killed").await;
        if answer.status < 500 {
            break answer;
        }
        assert!(Instant::now() < deadline, "{place} ({what}): the killed delivery stays held: {answer:?}");
        // A sender's retry interval, not a synchronisation.
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    assert_eq!(retry.status, 202, "{place} ({what}): the retry of the killed delivery: {retry:?}");
    accepted.push(accepted_id(&retry));
    accept_or_5xx(&front.post(mall, product, "later-4").await, &mut accepted, &place);
    fetch_all(front, gates, &mut answered).await;

    for id in &accepted {
        assert!(answered.contains(id), "{place} ({what}): {id} was answered 202 but no fetch answers it");
    }
    let tag = Tag::for_mall(mall);
    let gate = format!("product:{product}");
    let joined = redis.keyspace().key(&tag, "joined", &gate);
    assert!(!redis.keys().await.contains(&joined), "{place} ({what}): events wait in a mark no message will take");
    let mark: Option<String> = redis::cmd("GET")
        .arg(redis.keyspace().key(&tag, "gate", &gate))
        .query_async(&mut redis.conn().await)
        .await
        .unwrap_or_else(|e| panic!("GET: {e}"));
    assert!(
        mark.as_deref().is_none_or(|m| m.starts_with("lease:")),
        "{place} ({what}): a confirmed mark {mark:?} outlives every message"
    );
    PointOutcome {
        command,
        side,
        what,
        killed: killed.status,
        retry: retry.body["status"].as_str().unwrap_or_default().to_owned(),
        accepted: accepted.len(),
    }
}

/// Emulates the fetch step's start for every message in the queue: each
/// answers itself and whoever joined its mark.
async fn fetch_all<F: Front>(front: &F, gates: &Gates<Connection>, answered: &mut BTreeSet<String>) {
    for id in front.drain().await {
        // s:<mall>:<event_no>:<kind>:<resource id>:<delivery>
        let parts: Vec<&str> = id.split(':').collect();
        let (tag, gate) = (Tag::for_mall(parts[1]), format!("{}:{}", parts[3], parts[4]));
        let taken = gates.take(&tag, &gate, &id).await.unwrap_or_else(|e| panic!("take: {e}"));
        answered.extend(taken.joined().iter().cloned());
        answered.insert(id);
    }
}

fn accept_or_5xx(answer: &Answer, accepted: &mut Vec<String>, place: &str) {
    match answer.status {
        202 => accepted.push(accepted_id(answer)),
        500..=599 => {}
        _ => panic!("{place}: a later webhook answered {answer:?}"),
    }
}

fn accepted_id(answer: &Answer) -> String {
    assert_eq!(answer.status, 202, "{answer:?}");
    answer.body["event_ids"][0].as_str().unwrap_or_else(|| panic!("no event id in {answer:?}")).to_owned()
}

/// The crashes are panics by design: print only the other ones.
fn quiet_simulated_crashes() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info.payload().downcast_ref::<String>().map(String::as_str).unwrap_or_default();
        if !message.starts_with("simulated crash") {
            report(info);
        }
    }));
}

/// The outcomes as a table, for the test's output.
pub fn table(outcomes: &[PointOutcome]) -> String {
    let mut out = String::from("crash point                                   killed  retry       accepted\n");
    for o in outcomes {
        let point = format!("{:?} #{} {}", o.side, o.command, o.what);
        out += &format!("{point:<45} {:<7} {:<11} {}\n", o.killed, o.retry, o.accepted);
    }
    out
}
