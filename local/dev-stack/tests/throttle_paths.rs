//! The deployed definition's answer to Lambda throttling, state by state,
//! with steps that refuse as a function past its reserved concurrency
//! does (`Lambda.TooManyRequestsException`): a throttle is retried for
//! about a minute, and past that it defers only what it concerns, never
//! failing the execution or recording the events as failed. On a paused
//! tokio clock, so a minute of backoff takes no real time.

use serde_json::{Value, json};
use sluice_asl::{ExecutionOptions, Executor, Outcome, StateMachine, TaskError, TaskRegistry, VirtualClock};
use sluice_dev_stack::{PIPELINE_DEFINITION, substitutions};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

fn throttled() -> TaskError {
    TaskError::new("Lambda.TooManyRequestsException", "Rate Exceeded.")
}

/// One group of shop items, as PlanBatch plans it.
fn group(name: &str, ids: &[&str]) -> Value {
    let items: Vec<Value> = ids.iter().map(|id| json!({"item_id": id, "receive_count": 1, "kind": "shop"})).collect();
    let remaining: Vec<Value> =
        (0..ids.len()).map(|i| ids[i..].iter().map(|id| json!({"itemIdentifier": id})).collect()).collect();
    json!({"group": name, "count": ids.len(), "position": 0, "items": items, "remaining": remaining})
}

/// The pipe's batch: each message on its first receive.
fn batch(ids: &[&str]) -> Value {
    let attributes = json!({"ApproximateReceiveCount": "1", "MessageGroupId": "mall-a"});
    ids.iter().map(|id| json!({"messageId": id, "body": "{}", "attributes": attributes})).collect()
}

/// The queue's `maxReceiveCount` the definition is loaded with.
const MAX_RECEIVE_COUNT: u32 = 5;

/// The failures an execution reported, or why it did not succeed.
fn failures(outcome: &Outcome) -> Vec<String> {
    let Outcome::Succeeded(output) = outcome else { panic!("the execution failed: {outcome:?}") };
    let mut ids: Vec<String> = output["batchItemFailures"]
        .as_array()
        .expect("batchItemFailures")
        .iter()
        .map(|f| f["itemIdentifier"].as_str().expect("itemIdentifier").to_owned())
        .collect();
    ids.sort();
    ids
}

fn executor(registry: TaskRegistry) -> Executor {
    let machine = StateMachine::load(PIPELINE_DEFINITION, &substitutions(MAX_RECEIVE_COUNT)).expect("definition");
    Executor::new(machine, registry, VirtualClock::starting_at(SystemTime::now()))
}

fn count(counter: &Arc<AtomicU64>) -> u64 {
    counter.load(Ordering::Relaxed)
}

#[tokio::test(start_paused = true)]
async fn a_plan_throttled_past_its_retries_defers_the_whole_batch_and_the_execution_succeeds() {
    let plans = Arc::new(AtomicU64::new(0));
    let seen = plans.clone();
    let registry = TaskRegistry::new().with("PlanBatch", move |_input: Value| {
        seen.fetch_add(1, Ordering::Relaxed);
        async move { Err::<Value, _>(throttled()) }
    });
    let recorded = Arc::new(AtomicU64::new(0));
    let failure_seen = recorded.clone();
    let registry = registry.with("RecordFailure", move |_input: Value| {
        failure_seen.fetch_add(1, Ordering::Relaxed);
        async move { Ok(json!({})) }
    });
    let started = tokio::time::Instant::now();
    let execution = executor(registry).run(batch(&["m1", "m2", "m3"]), ExecutionOptions::default()).await;
    assert_eq!(failures(&execution.outcome), ["m1", "m2", "m3"]);
    assert_eq!(count(&plans), 9, "the first call and eight retries");
    assert_eq!(count(&recorded), 0, "a throttle before the last receive is not the events' failure");
    // Ridden out for a while (backoff up to 15 s, full jitter), well
    // inside the execution's 240 s.
    assert!(started.elapsed() < Duration::from_secs(240), "{:?}", started.elapsed());
}

#[tokio::test(start_paused = true)]
async fn a_step_throttled_past_its_retries_defers_its_group_only_and_records_no_failure() {
    let (fetches, recorded) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (fetch_seen, failure_seen) = (fetches.clone(), recorded.clone());
    let plan =
        json!({"max_concurrency": 10, "groups": [group("mall-a", &["a1", "a2"]), group("mall-b", &["b1", "b2"])]});
    let registry = TaskRegistry::new()
        .with("PlanBatch", move |_input: Value| {
            let plan = plan.clone();
            async move { Ok(plan) }
        })
        .with("Fetch", move |input: Value| {
            fetch_seen.fetch_add(1, Ordering::Relaxed);
            async move {
                match input["item"]["item_id"].as_str() {
                    Some(id) if id.starts_with('a') => Err(throttled()),
                    _ => Ok(json!({"outcome": "fetched", "wait_seconds": 0, "snapshot": {}, "token": null})),
                }
            }
        })
        .with("Store", |_input: Value| async move { Ok(json!({})) })
        .with("RecordFailure", move |_input: Value| {
            failure_seen.fetch_add(1, Ordering::Relaxed);
            async move { Ok(json!({})) }
        });
    let execution = executor(registry).run(batch(&["a1", "a2", "b1", "b2"]), ExecutionOptions::default()).await;
    // mall-a's first item and the one behind it come back; mall-b is done.
    assert_eq!(failures(&execution.outcome), ["a1", "a2"]);
    assert_eq!(count(&recorded), 0, "a throttle was recorded as the event's failure");
    // a1: the first call and eight retries; b1, b2: one each; a2 never ran.
    assert_eq!(count(&fetches), 9 + 2);
}

#[tokio::test(start_paused = true)]
async fn a_throttle_that_clears_within_its_retries_costs_nothing_but_time() {
    let calls = Arc::new(AtomicU64::new(0));
    let seen = calls.clone();
    let plan = json!({"max_concurrency": 10, "groups": [group("mall-a", &["a1"])]});
    let registry = TaskRegistry::new()
        .with("PlanBatch", move |_input: Value| {
            let plan = plan.clone();
            async move { Ok(plan) }
        })
        .with("Fetch", move |_input: Value| {
            let n = seen.fetch_add(1, Ordering::Relaxed);
            async move {
                match n < 6 {
                    true => Err(throttled()),
                    false => Ok(json!({"outcome": "fetched", "wait_seconds": 0, "snapshot": {}, "token": null})),
                }
            }
        })
        .with("Store", |_input: Value| async move { Ok(json!({})) })
        .with("RecordFailure", |_input: Value| async move { Err::<Value, _>(TaskError::new("Unexpected", "")) });
    let execution = executor(registry).run(batch(&["a1"]), ExecutionOptions::default()).await;
    // Six refusals in a row (the old retry gave up after three).
    assert_eq!(failures(&execution.outcome), Vec::<String>::new());
    assert_eq!(count(&calls), 7);
}

#[tokio::test(start_paused = true)]
async fn a_throttle_on_the_last_receive_is_recorded_so_the_dead_letter_queue_has_its_reason() {
    let recorded = Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = recorded.clone();
    let mut plan = json!({"max_concurrency": 10, "groups": [group("mall-a", &["a1", "a2"])]});
    plan["groups"][0]["items"][0]["receive_count"] = json!(5);
    plan["groups"][0]["items"][0]["last_receive"] = json!(true);
    let registry = TaskRegistry::new()
        .with("PlanBatch", move |_input: Value| {
            let plan = plan.clone();
            async move { Ok(plan) }
        })
        .with("Fetch", |_input: Value| async move { Err::<Value, _>(throttled()) })
        .with("RecordFailure", move |input: Value| {
            kept.lock().unwrap().push(input);
            async move { Ok(json!({})) }
        });
    let execution = executor(registry).run(batch(&["a1", "a2"]), ExecutionOptions::default()).await;
    assert_eq!(failures(&execution.outcome), ["a1", "a2"]);
    let recorded = recorded.lock().unwrap();
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    assert_eq!(recorded[0]["item"]["item_id"], "a1");
    assert_eq!(recorded[0]["failure"]["Error"], "Lambda.TooManyRequestsException");
}

#[tokio::test(start_paused = true)]
async fn a_plan_throttled_on_a_message_s_last_receive_records_it_so_the_dead_letter_queue_has_its_reason() {
    let recorded = Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = recorded.clone();
    let registry = TaskRegistry::new()
        .with("PlanBatch", |_input: Value| async move { Err::<Value, _>(throttled()) })
        .with("RecordFailure", move |input: Value| {
            kept.lock().unwrap().push(input);
            async move { Ok(json!({})) }
        });
    let mut messages = batch(&["m1", "m2", "m3"]);
    messages[1]["attributes"]["ApproximateReceiveCount"] = json!(MAX_RECEIVE_COUNT.to_string());
    messages[2]["attributes"]["ApproximateReceiveCount"] = json!((MAX_RECEIVE_COUNT - 1).to_string());
    let execution = executor(registry).run(messages.clone(), ExecutionOptions::default()).await;
    assert_eq!(failures(&execution.outcome), ["m1", "m2", "m3"], "every message comes back (m2 to its DLQ)");
    let recorded = recorded.lock().unwrap();
    assert_eq!(recorded.len(), 1, "only the message on its last receive: {recorded:?}");
    assert_eq!(recorded[0]["message"], messages[1], "the message as the pipe gave it, for RecordFailure to plan");
    assert_eq!(recorded[0]["failure"]["Error"], "Lambda.TooManyRequestsException");
}

#[tokio::test(start_paused = true)]
async fn a_record_of_a_throttled_batch_that_fails_still_sends_the_message_back() {
    let registry = TaskRegistry::new()
        .with("PlanBatch", |_input: Value| async move { Err::<Value, _>(throttled()) })
        .with("RecordFailure", |_input: Value| async move { Err::<Value, _>(TaskError::new("Sluice.Internal", "")) });
    let mut messages = batch(&["m1"]);
    messages[0]["attributes"]["ApproximateReceiveCount"] = json!(MAX_RECEIVE_COUNT.to_string());
    let execution = executor(registry).run(messages, ExecutionOptions::default()).await;
    assert_eq!(failures(&execution.outcome), ["m1"]);
}
