//! Interpreter throughput on one core: executions of a 10-item inline Map
//! whose iterations each call one trivial in-process task through
//! `arn:aws:states:::lambda:invoke` (Parameters, Payload, OutputPath),
//! side by side with a baseline doing the same work as plain Rust calls of
//! the same task function, no interpreter. Prints Markdown; `make bench`
//! saves it to `bench/asl.md`.

use serde_json::{Value, json};
use sluice_asl::{ExecutionOptions, Executor, StateMachine, Substitutions, SystemClock, TaskError, TaskRegistry};
use std::time::{Duration, Instant};

const ITEMS: usize = 10;
const TARGET_TRANSITIONS_PER_SECOND: f64 = 20_000.0;
const ROUND: Duration = Duration::from_secs(1);
const ROUNDS: usize = 3;

const DEFINITION: &str = r#"{
  "StartAt": "ForEachEvent",
  "States": {
    "ForEachEvent": {
      "Type": "Map",
      "ItemsPath": "$.events",
      "MaxConcurrency": 10,
      "ItemProcessor": {
        "StartAt": "Apply",
        "States": {
          "Apply": {
            "Type": "Task",
            "Resource": "arn:aws:states:::lambda:invoke",
            "Parameters": { "FunctionName": "${ApplyFunction}", "Payload.$": "$" },
            "OutputPath": "$.Payload",
            "Retry": [{ "ErrorEquals": ["Sluice.RateLimited"], "IntervalSeconds": 1, "MaxAttempts": 3 }],
            "End": true
          }
        }
      },
      "ResultPath": "$.results",
      "End": true
    }
  }
}"#;

/// The task: what a step Lambda's handler would do with one event, minus
/// the I/O.
async fn apply(event: Value) -> Result<Value, TaskError> {
    let shop = event["shop"].as_str().unwrap_or_default();
    Ok(json!({ "shop": shop, "product": event["product"], "applied": true }))
}

fn input() -> Value {
    json!({ "batch": "b-1", "events": (0..ITEMS).map(|i| json!({"shop": "mall-a", "product": i})).collect::<Vec<_>>() })
}

/// The same work without an interpreter: one call per event, results in
/// order, written back into the input.
async fn baseline(mut input: Value) -> Value {
    let events = input["events"].as_array().cloned().unwrap_or_default();
    let mut results = Vec::with_capacity(events.len());
    for event in events {
        results.push(apply(event).await.expect("apply"));
    }
    input["results"] = Value::Array(results);
    input
}

/// Runs `f` repeatedly for `ROUND`; returns runs per second.
async fn measure<F, Fut>(mut f: F) -> f64
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let started = Instant::now();
    let mut runs = 0u64;
    while started.elapsed() < ROUND {
        for _ in 0..64 {
            f().await;
        }
        runs += 64;
    }
    runs as f64 / started.elapsed().as_secs_f64()
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        let machine =
            StateMachine::load(DEFINITION, &Substitutions::new().with("ApplyFunction", "apply")).expect("definition");
        let executor = Executor::new(machine, TaskRegistry::new().with("apply", apply), SystemClock);
        let input = input();

        // Both must produce the same output, and the execution's history
        // gives the state transitions per execution.
        let execution = executor.run(input.clone(), ExecutionOptions::default()).await;
        let expected = baseline(input.clone()).await;
        assert_eq!(execution.output(), Some(&expected), "the interpreter and the baseline disagree");
        let transitions = execution.state_transitions() as f64;
        let events = execution.history.len();

        let (mut ours, mut plain) = (Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            ours.push(
                measure(|| {
                    let (executor, input) = (&executor, input.clone());
                    async move {
                        let execution = executor.run(input, ExecutionOptions::default()).await;
                        std::hint::black_box(execution);
                    }
                })
                .await,
            );
            plain.push(
                measure(|| {
                    let input = input.clone();
                    async move {
                        std::hint::black_box(baseline(input).await);
                    }
                })
                .await,
            );
        }
        let (ours, plain) = (median(ours), median(plain));
        let ours_transitions = ours * transitions;
        println!("# ASL interpreter vs plain Rust calls\n");
        println!(
            "One core (current-thread tokio runtime), real clock. Each execution: an inline Map over {ITEMS} events, each \
             iteration one `lambda:invoke` Task (Parameters with `Payload.$`, OutputPath, a Retry) calling a trivial \
             in-process function; {transitions} state transitions and {events} history events per execution. The \
             baseline calls the same function {ITEMS} times in a loop and writes the results into the input. Each \
             cell runs {} s, {ROUNDS} times interleaved; the median is shown.\n",
            ROUND.as_secs()
        );
        println!("| | executions/s | state transitions/s | µs per execution |");
        println!("|---|---:|---:|---:|");
        println!("| interpreter | {ours:.0} | {ours_transitions:.0} | {:.1} |", 1e6 / ours);
        println!("| plain Rust calls (baseline) | {plain:.0} | — | {:.1} |", 1e6 / plain);
        println!("\nInterpreter / baseline: {:.3}× the executions per second.", ours / plain);
        let verdict = if ours_transitions >= TARGET_TRANSITIONS_PER_SECOND { "met" } else { "NOT met" };
        println!(
            "\nTarget: ≥ {TARGET_TRANSITIONS_PER_SECOND:.0} state transitions/s on one core: {ours_transitions:.0}, {verdict}."
        );
    });
}
