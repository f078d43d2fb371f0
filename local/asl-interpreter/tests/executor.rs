//! Executor behaviour beyond single documented examples: jitter bounds on
//! the virtual clock, execution timeouts, concurrent executions on a
//! multi-threaded runtime, missing handlers, history lines of Map
//! iterations, and domain errors as task errors.

use serde_json::{Value, json};
use sluice_asl::{
    EventType, ExecutionOptions, Executor, Outcome, StateMachine, Substitutions, SystemClock, TaskError, TaskRegistry,
    VirtualClock,
};
use sluice_domain::{ErrorKind, StepError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

fn load(definition: Value) -> StateMachine {
    StateMachine::load(&definition.to_string(), &Substitutions::new()).unwrap_or_else(|e| panic!("{e}"))
}

fn virtual_clock() -> VirtualClock {
    VirtualClock::starting_at(SystemTime::UNIX_EPOCH + Duration::from_secs(1_704_067_200))
}

#[tokio::test(start_paused = true)]
async fn full_jitter_waits_between_zero_and_the_backoff() {
    let machine = load(json!({"StartAt": "Call", "States": {"Call": {"Type": "Task", "Resource": "flaky",
        "Retry": [{"ErrorEquals": ["Sluice.UpstreamThrottled"], "IntervalSeconds": 10, "BackoffRate": 2.0,
                   "MaxAttempts": 4, "JitterStrategy": "FULL"}], "End": true}}}));
    let clock = virtual_clock();
    let times = Arc::new(Mutex::new(Vec::new()));
    let seen = times.clone();
    let registry = TaskRegistry::new().with("flaky", move |_input: Value| {
        seen.lock().unwrap().push(clock.elapsed().as_secs_f64());
        async { Err::<Value, _>(TaskError::new("Sluice.UpstreamThrottled", "429")) }
    });
    let options = ExecutionOptions { jitter_seed: Some(42), ..ExecutionOptions::default() };
    let execution = Executor::new(machine, registry, clock).run(json!({}), options).await;
    assert!(matches!(execution.outcome, Outcome::Failed { ref error, .. } if error == "Sluice.UpstreamThrottled"));
    let times = times.lock().unwrap().clone();
    assert_eq!(times.len(), 5, "one call and four retries: {times:?}");
    let waits: Vec<f64> = times.windows(2).map(|w| w[1] - w[0]).collect();
    let backoffs = [10.0, 20.0, 40.0, 80.0];
    for (wait, backoff) in waits.iter().zip(backoffs) {
        assert!((0.0..=backoff).contains(wait), "wait {wait} outside [0, {backoff}]: {waits:?}");
    }
    assert!(waits.iter().zip(backoffs).any(|(w, b)| (w - b).abs() > 1e-3), "jitter changed nothing: {waits:?}");
}

#[tokio::test(start_paused = true)]
async fn the_execution_timeout_stops_a_long_wait() {
    let machine = load(json!({"TimeoutSeconds": 5, "StartAt": "Sleep",
        "States": {"Sleep": {"Type": "Wait", "Seconds": 60, "End": true}}}));
    let clock = virtual_clock();
    let execution =
        Executor::new(machine, TaskRegistry::new(), clock).run(json!({}), ExecutionOptions::default()).await;
    assert_eq!(execution.outcome, Outcome::Failed { error: "States.Timeout".into(), cause: None });
    assert_eq!(clock.elapsed(), Duration::from_secs(5));
    assert_eq!(execution.history.last().map(|e| e.event_type), Some(EventType::ExecutionTimedOut));
}

#[test]
fn executions_run_concurrently_on_a_multi_threaded_runtime() {
    let machine = load(json!({"StartAt": "Fan", "States": {"Fan": {"Type": "Map", "ItemsPath": "$.items",
        "ItemProcessor": {"StartAt": "Double", "States": {"Double": {"Type": "Task",
            "Resource": "arn:aws:states:::lambda:invoke", "Parameters": {"FunctionName": "double", "Payload.$": "$"},
            "OutputPath": "$.Payload", "End": true}}}, "End": true}}}));
    let registry = TaskRegistry::new().with("double", |input: Value| async move {
        tokio::task::yield_now().await;
        Ok::<_, TaskError>(json!(input.as_i64().unwrap() * 2))
    });
    let executor = Executor::new(machine, registry, SystemClock);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let runs: Vec<_> = (0..20i64)
            .map(|n| {
                let executor = executor.clone();
                // `spawn` needs the execution future to be Send.
                tokio::spawn(async move {
                    (n, executor.run(json!({"items": [n, n + 1]}), ExecutionOptions::default()).await)
                })
            })
            .collect();
        let all =
            tokio::time::timeout(Duration::from_secs(30), futures::future::join_all(runs)).await.expect("finished");
        for joined in all {
            let (n, execution) = joined.unwrap();
            assert_eq!(execution.output(), Some(&json!([2 * n, 2 * n + 2])));
        }
    });
}

#[tokio::test(start_paused = true)]
async fn a_task_with_no_handler_fails_with_states_runtime() {
    let machine = load(json!({"StartAt": "Call", "States": {"Call": {"Type": "Task", "Resource": "nobody",
        "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Caught"}], "End": true}, "Caught": {"Type": "Succeed"}}}));
    let executor = Executor::new(machine, TaskRegistry::new(), virtual_clock());
    assert_eq!(executor.missing_handlers().len(), 1);
    let execution = executor.run(json!({}), ExecutionOptions::default()).await;
    match execution.outcome {
        Outcome::Failed { error, cause } => {
            assert_eq!(error, "States.Runtime");
            assert!(cause.unwrap().contains("\"nobody\""));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn each_map_iteration_has_its_own_line_of_history() {
    let machine = load(json!({"StartAt": "Map", "States": {"Map": {"Type": "Map",
        "ItemProcessor": {"StartAt": "Wait", "States": {"Wait": {"Type": "Wait", "SecondsPath": "$", "End": true}}},
        "End": true}}}));
    let execution = Executor::new(machine, TaskRegistry::new(), virtual_clock())
        .run(json!([2, 1]), ExecutionOptions::default())
        .await;
    assert_eq!(execution.output(), Some(&json!([2, 1])));
    let started = execution.history.iter().find(|e| e.event_type == EventType::MapStateStarted).unwrap();
    let iterations: Vec<_> =
        execution.history.iter().filter(|e| e.event_type == EventType::MapIterationStarted).collect();
    assert_eq!(iterations.len(), 2);
    assert!(iterations.iter().all(|e| e.previous_event_id == started.id), "{:#?}", execution.history);
    // Each iteration's events chain to its own earlier events.
    for index in [0, 1] {
        let line: Vec<_> = execution
            .history
            .iter()
            .filter(|e| {
                matches!(e.event_type, EventType::MapIterationStarted | EventType::MapIterationSucceeded)
                    && e.details.index == Some(index)
            })
            .collect();
        assert_eq!(line.len(), 2);
    }
    let entered: Vec<_> = execution.history.iter().filter(|e| e.event_type == EventType::WaitStateEntered).collect();
    for wait in entered {
        let previous = &execution.history[wait.previous_event_id as usize - 1];
        assert_eq!(previous.event_type, EventType::MapIterationStarted);
    }
}

#[tokio::test(start_paused = true)]
async fn domain_step_errors_are_matched_by_name() {
    let machine = load(json!({"StartAt": "Fetch", "States": {"Fetch": {"Type": "Task",
        "Resource": "arn:aws:lambda:eu-west-1:123456789012:function:fetch",
        "Retry": [{"ErrorEquals": ["Sluice.RateLimited"], "IntervalSeconds": 1, "MaxAttempts": 1}],
        "Catch": [{"ErrorEquals": ["Sluice.RateLimited"], "ResultPath": "$.error", "Next": "Park"}], "End": true},
        "Park": {"Type": "Pass", "End": true}}}));
    let registry = TaskRegistry::new().with("fetch", |_input: Value| async {
        Err::<Value, TaskError>(StepError::new(ErrorKind::RateLimited, "bucket empty for 2 s").into())
    });
    let clock = virtual_clock();
    let execution =
        Executor::new(machine, registry, clock).run(json!({"shop": "a"}), ExecutionOptions::default()).await;
    assert_eq!(clock.elapsed(), Duration::from_secs(1), "one retry after 1 s");
    assert_eq!(
        execution.output(),
        Some(&json!({"shop": "a", "error": {"Error": "Sluice.RateLimited",
            "Cause": "{\"errorType\":\"Sluice.RateLimited\",\"errorMessage\":\"bucket empty for 2 s\"}"}}))
    );
}
