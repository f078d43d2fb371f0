//! The 256 KiB payload quota, as Step Functions enforces it: a state's
//! output, a task's input after Parameters, a task's result, a Map's
//! results together, and the execution's input, each over 262,144 bytes of
//! UTF-8 JSON, fail with `States.DataLimitExceeded`, which no Retry or
//! Catch handles (not `States.ALL`, not even its own name: it is terminal).

use serde_json::{Value, json};
use sluice_asl::{
    EventType, ExecutionOptions, Executor, MAX_PAYLOAD_BYTES, Outcome, StateMachine, Substitutions, TaskError,
    TaskRegistry, VirtualClock,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

const DATA_LIMIT_EXCEEDED: &str = "States.DataLimitExceeded";

fn load(definition: Value) -> StateMachine {
    StateMachine::load(&definition.to_string(), &Substitutions::new()).unwrap_or_else(|e| panic!("{e}"))
}

fn clock() -> VirtualClock {
    VirtualClock::starting_at(SystemTime::UNIX_EPOCH + Duration::from_secs(1_704_067_200))
}

/// A string whose JSON text (with its quotes) is `bytes` long.
fn text_of(bytes: usize) -> Value {
    Value::String("x".repeat(bytes - 2))
}

/// Every way a definition can try to handle an error, around `inner`:
/// retried on `States.ALL`, caught by name and by `States.ALL`.
fn guarded(inner: Value) -> Value {
    json!({"StartAt": "Guard", "States": {
        "Guard": {"Type": "Parallel", "Branches": [{"StartAt": "Inner", "States": {"Inner": inner}}],
            "Retry": [{"ErrorEquals": ["States.ALL"], "MaxAttempts": 2}],
            "Catch": [{"ErrorEquals": [DATA_LIMIT_EXCEEDED], "Next": "Caught"},
                      {"ErrorEquals": ["States.ALL"], "Next": "Caught"}],
            "End": true},
        "Caught": {"Type": "Succeed"}}})
}

fn failed_error(outcome: &Outcome) -> (&str, &str) {
    match outcome {
        Outcome::Failed { error, cause } => (error.as_str(), cause.as_deref().unwrap_or("")),
        other => panic!("the execution did not fail: {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn an_oversized_state_output_fails_the_execution_with_data_limit_exceeded() {
    let big = text_of(300 * 1024);
    let machine = load(guarded(json!({"Type": "Pass", "Result": {"product": big}, "End": true})));
    let execution =
        Executor::new(machine, TaskRegistry::new(), clock()).run(json!({}), ExecutionOptions::default()).await;
    let (error, cause) = failed_error(&execution.outcome);
    assert_eq!(error, DATA_LIMIT_EXCEEDED);
    assert!(cause.contains("'Inner'"), "{cause}");
    // The state fails before it exits, and nothing caught it.
    let types: Vec<EventType> = execution.history.iter().map(|e| e.event_type).collect();
    assert!(!types.contains(&EventType::PassStateExited), "{types:?}");
    assert!(!execution.history.iter().any(|e| e.details.name.as_deref() == Some("Caught")), "{types:?}");
    assert_eq!(types.last(), Some(&EventType::ExecutionFailed));
}

#[tokio::test(start_paused = true)]
async fn a_result_of_exactly_the_quota_passes_and_one_byte_more_fails() {
    for (bytes, passes) in [(MAX_PAYLOAD_BYTES, true), (MAX_PAYLOAD_BYTES + 1, false)] {
        let machine = load(json!({"StartAt": "Make", "States": {"Make": {"Type": "Task", "Resource": "make",
            "End": true}}}));
        let registry =
            TaskRegistry::new().with("make", move |_input: Value| async move { Ok::<_, TaskError>(text_of(bytes)) });
        let execution = Executor::new(machine, registry, clock()).run(json!({}), ExecutionOptions::default()).await;
        match passes {
            true => assert_eq!(execution.output().map(|o| o.to_string().len()), Some(MAX_PAYLOAD_BYTES)),
            false => assert_eq!(failed_error(&execution.outcome).0, DATA_LIMIT_EXCEEDED),
        }
    }
}

#[tokio::test(start_paused = true)]
async fn an_oversized_task_result_fails_the_task_and_is_neither_retried_nor_caught() {
    // The task retries and catches everything itself, by name too, inside
    // the guard's own Retry and Catch.
    let mut definition = guarded(json!({}));
    definition["States"]["Guard"]["Branches"][0]["States"] = json!({
        "Inner": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
            "Parameters": {"FunctionName": "fetch", "Payload.$": "$"},
            "Retry": [{"ErrorEquals": ["States.ALL"], "MaxAttempts": 3}],
            "Catch": [{"ErrorEquals": [DATA_LIMIT_EXCEEDED], "Next": "Handled"},
                      {"ErrorEquals": ["States.ALL"], "Next": "Handled"}], "End": true},
        "Handled": {"Type": "Succeed"}});
    let machine = load(definition);
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let registry = TaskRegistry::new().with("fetch", move |_input: Value| {
        counted.fetch_add(1, Ordering::SeqCst);
        async { Ok::<_, TaskError>(json!({"body": text_of(300 * 1024)})) }
    });
    let execution = Executor::new(machine, registry, clock()).run(json!({}), ExecutionOptions::default()).await;
    let (error, cause) = failed_error(&execution.outcome);
    assert_eq!(error, DATA_LIMIT_EXCEEDED);
    assert!(cause.contains("'lambda'"), "Step Functions names the resource: {cause}");
    assert_eq!(calls.load(Ordering::SeqCst), 1, "not retried");
    let failed = execution.history.iter().find(|e| e.event_type == EventType::TaskFailed).expect("TaskFailed");
    assert_eq!(failed.details.error.as_deref(), Some(DATA_LIMIT_EXCEEDED));
    assert!(!execution.history.iter().any(|e| e.event_type == EventType::TaskSucceeded));
    assert!(!execution.history.iter().any(|e| e.details.name.as_deref() == Some("Handled")));
}

#[tokio::test(start_paused = true)]
async fn an_oversized_task_input_after_parameters_fails_before_the_call() {
    let machine = load(guarded(json!({"Type": "Task", "Resource": "store",
        "Parameters": {"a.$": "$.half", "b.$": "$.half"}, "End": true})));
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let registry = TaskRegistry::new().with("store", move |_input: Value| {
        counted.fetch_add(1, Ordering::SeqCst);
        async { Ok::<_, TaskError>(json!({})) }
    });
    // The input is under the quota; Parameters doubles it.
    let input = json!({"half": text_of(150 * 1024)});
    let execution = Executor::new(machine, registry, clock()).run(input, ExecutionOptions::default()).await;
    let (error, cause) = failed_error(&execution.outcome);
    assert_eq!(error, DATA_LIMIT_EXCEEDED);
    assert!(cause.contains("input"), "{cause}");
    assert_eq!(calls.load(Ordering::SeqCst), 0, "the resource is never called");
}

#[tokio::test(start_paused = true)]
async fn map_results_over_the_quota_together_fail_the_map() {
    // Five iterations of 60 KB each: every one under the quota, 300 KB
    // together.
    let machine = load(json!({"StartAt": "Each", "States": {"Each": {"Type": "Map",
        "ItemProcessor": {"StartAt": "Make", "States": {"Make": {"Type": "Task", "Resource": "make", "End": true}}},
        "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Caught"}],
        "ResultPath": null, "End": true},
        "Caught": {"Type": "Succeed"}}}));
    let registry = TaskRegistry::new().with("make", |_input: Value| async { Ok::<_, TaskError>(text_of(60 * 1024)) });
    let execution =
        Executor::new(machine, registry, clock()).run(json!([1, 2, 3, 4, 5]), ExecutionOptions::default()).await;
    let (error, cause) = failed_error(&execution.outcome);
    assert_eq!(error, DATA_LIMIT_EXCEEDED, "ResultPath null does not spare the Map's result");
    assert!(cause.contains("'Each'"), "{cause}");
    assert_eq!(execution.history.iter().filter(|e| e.event_type == EventType::TaskSucceeded).count(), 5);
    assert!(execution.history.iter().any(|e| e.event_type == EventType::MapStateFailed));
}

#[tokio::test(start_paused = true)]
async fn an_oversized_execution_input_fails_at_once() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let registry = TaskRegistry::new().with("any", move |_input: Value| {
        counted.fetch_add(1, Ordering::SeqCst);
        async { Ok::<_, TaskError>(json!({})) }
    });
    let machine =
        load(json!({"StartAt": "Call", "States": {"Call": {"Type": "Task", "Resource": "any", "End": true}}}));
    let execution =
        Executor::new(machine, registry, clock()).run(text_of(300 * 1024), ExecutionOptions::default()).await;
    assert_eq!(failed_error(&execution.outcome).0, DATA_LIMIT_EXCEEDED);
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}
