//! The conformance suite: every `conformance/<feature>/<case>.json` holds a
//! small definition taken from the AWS documentation page in its `source`,
//! the input, what each task does, and what the execution must produce
//! (output or error, task inputs, call times on the virtual clock, peak
//! concurrency, event types). One test loads and runs every case, each in
//! its own runtime with paused time, and reports every mismatch.
//!
//! Task behaviours: `"echo"`, `{"return": v}`, `{"merge": {…}}` (the input
//! object plus these fields), `{"fail": {"error", "cause"}}`,
//! `{"sleep": seconds, "then": b}`, `{"sequence": [b…]}` (the n-th call
//! does the n-th, the last repeats) and `{"when": [{"input": v, "then":
//! b}…], "else": b}`.

use serde_json::{Value, json};
use sluice_asl::{
    Clock, ExecutionOptions, Executor, Outcome, StateMachine, Substitutions, TaskError, TaskRegistry, VirtualClock,
};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// 2024-01-01T00:00:00Z: the virtual clock's start in every case.
const CLOCK_START_SECS: u64 = 1_704_067_200;

#[test]
fn every_conformance_case_behaves_as_documented() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance");
    let cases = case_files(&root);
    assert!(cases.len() >= 50, "expected the conformance cases under {}, found {}", root.display(), cases.len());
    let mut failures = Vec::new();
    for path in &cases {
        let name = path.strip_prefix(&root).unwrap().display().to_string();
        let case: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap())
            .unwrap_or_else(|e| panic!("{name} is not JSON: {e}"));
        assert!(
            case["source"].as_str().is_some_and(|s| s.starts_with("https://docs.aws.amazon.com/")),
            "{name} must name the AWS documentation page it comes from"
        );
        let problems = run_case(&case);
        if !problems.is_empty() {
            failures.push(format!("{name}:\n  {}", problems.join("\n  ")));
        }
    }
    assert!(failures.is_empty(), "{} of {} cases failed:\n{}", failures.len(), cases.len(), failures.join("\n"));
    eprintln!("{} conformance cases passed", cases.len());
}

fn case_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(case_files(&path));
        } else if path.extension().is_some_and(|e| e == "json") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// What the handlers saw.
#[derive(Default)]
struct Recorder {
    calls: Mutex<HashMap<String, Vec<(Value, f64)>>>,
    in_flight: Mutex<HashMap<String, (usize, usize)>>,
}

impl Recorder {
    fn start(&self, key: &str, input: &Value, at: f64) -> usize {
        let mut calls = self.calls.lock().unwrap();
        let list = calls.entry(key.to_owned()).or_default();
        list.push((input.clone(), at));
        let mut in_flight = self.in_flight.lock().unwrap();
        let (now, peak) = in_flight.entry(key.to_owned()).or_default();
        *now += 1;
        *peak = (*peak).max(*now);
        list.len() - 1
    }

    fn finish(&self, key: &str) {
        self.in_flight.lock().unwrap().get_mut(key).unwrap().0 -= 1;
    }
}

/// Ends a call's in-flight count even when the call is dropped (a Parallel
/// branch or Map iteration stopped by another's failure).
struct InFlight(Arc<Recorder>, String);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.finish(&self.1);
    }
}

async fn perform(behaviour: &Value, call: usize, input: Value) -> Result<Value, TaskError> {
    let mut behaviour = behaviour.clone();
    loop {
        behaviour = match &behaviour {
            Value::String(s) if s == "echo" => return Ok(input),
            Value::Object(b) if b.contains_key("return") => return Ok(b["return"].clone()),
            Value::Object(b) if b.contains_key("merge") => {
                let mut merged = input.as_object().cloned().unwrap_or_default();
                merged.extend(b["merge"].as_object().cloned().unwrap_or_default());
                return Ok(Value::Object(merged));
            }
            Value::Object(b) if b.contains_key("fail") => {
                let error = b["fail"]["error"].as_str().unwrap_or_default();
                return Err(TaskError::new(error, b["fail"]["cause"].as_str().unwrap_or_default()));
            }
            Value::Object(b) if b.contains_key("sleep") => {
                tokio::time::sleep(Duration::from_secs_f64(b["sleep"].as_f64().unwrap())).await;
                b["then"].clone()
            }
            Value::Object(b) if b.contains_key("sequence") => {
                let steps = b["sequence"].as_array().unwrap();
                steps[call.min(steps.len() - 1)].clone()
            }
            Value::Object(b) if b.contains_key("when") => {
                let branch = b["when"].as_array().unwrap().iter().find(|w| w["input"] == input);
                branch.map_or_else(|| b["else"].clone(), |w| w["then"].clone())
            }
            other => panic!("unknown task behaviour {other}"),
        };
    }
}

fn run_case(case: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let expect = &case["expect"];
    let substitutions: Substitutions = case["substitutions"]
        .as_object()
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned())).collect())
        .unwrap_or_default();
    let machine = match StateMachine::load(&case["definition"].to_string(), &substitutions) {
        Ok(machine) => machine,
        Err(e) => return vec![format!("did not load:\n{e}")],
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
    runtime.block_on(async {
        let clock = VirtualClock::starting_at(SystemTime::UNIX_EPOCH + Duration::from_secs(CLOCK_START_SECS));
        let recorder = Arc::new(Recorder::default());
        let mut registry = TaskRegistry::new();
        for (key, behaviour) in case["tasks"].as_object().cloned().unwrap_or_default() {
            let (recorder, clock) = (recorder.clone(), clock);
            registry.register(key.clone(), move |input: Value| {
                let (recorder, key, behaviour) = (recorder.clone(), key.clone(), behaviour.clone());
                let at = clock.elapsed().as_secs_f64();
                async move {
                    let call = recorder.start(&key, &input, at);
                    let _in_flight = InFlight(recorder.clone(), key);
                    perform(&behaviour, call, input).await
                }
            });
        }
        let missing = Executor::new(
            StateMachine::load(&case["definition"].to_string(), &substitutions).unwrap(),
            registry.clone(),
            clock,
        )
        .missing_handlers();
        if !missing.is_empty() {
            problems.push(format!("the case gives no behaviour for {missing:?}"));
        }
        let options = ExecutionOptions {
            name: case["execution_name"].as_str().map(str::to_owned),
            state_machine_name: case["state_machine_name"].as_str().map(str::to_owned),
            jitter_seed: Some(1),
            ..ExecutionOptions::default()
        };
        let executor = Executor::new(machine, registry, clock);
        let run = tokio::time::timeout(Duration::from_secs(86_400), executor.run(case["input"].clone(), options));
        let Ok(execution) = run.await else {
            problems.push("did not finish within a virtual day".to_owned());
            return;
        };
        let elapsed = clock.elapsed().as_secs_f64();
        check_outcome(expect, &execution.outcome, &mut problems);
        check_history(expect, &execution.history, clock.now(), &mut problems);
        let calls = recorder.calls.lock().unwrap().clone();
        for (key, inputs) in expect["task_inputs"].as_object().cloned().unwrap_or_default() {
            let seen: Vec<Value> =
                calls.get(&key).map(|c| c.iter().map(|(i, _)| i.clone()).collect()).unwrap_or_default();
            if Value::Array(seen.clone()) != inputs {
                problems.push(format!("inputs of {key}: expected {inputs}, got {}", Value::Array(seen)));
            }
        }
        for (key, times) in expect["task_call_times"].as_object().cloned().unwrap_or_default() {
            let seen: Vec<f64> = calls.get(&key).map(|c| c.iter().map(|(_, at)| *at).collect()).unwrap_or_default();
            let wanted: Vec<f64> = times.as_array().unwrap().iter().map(|t| t.as_f64().unwrap()).collect();
            if seen.len() != wanted.len() || seen.iter().zip(&wanted).any(|(a, b)| (a - b).abs() > 1e-6) {
                problems.push(format!("call times of {key} (virtual s): expected {wanted:?}, got {seen:?}"));
            }
        }
        for (key, peak) in expect["max_concurrency"].as_object().cloned().unwrap_or_default() {
            let seen = recorder.in_flight.lock().unwrap().get(&key).map_or(0, |(_, peak)| *peak);
            if Some(seen as u64) != peak.as_u64() {
                problems.push(format!("peak concurrency of {key}: expected {peak}, got {seen}"));
            }
        }
        if let Some(wanted) = expect["elapsed_seconds"].as_f64()
            && (elapsed - wanted).abs() > 1e-6
        {
            problems.push(format!("elapsed virtual time: expected {wanted} s, got {elapsed} s"));
        }
    });
    problems
}

fn check_outcome(expect: &Value, outcome: &Outcome, problems: &mut Vec<String>) {
    match (outcome, expect.get("output")) {
        (Outcome::Succeeded(output), Some(wanted)) if output == wanted => {}
        (Outcome::Succeeded(output), Some(wanted)) => problems.push(format!("output: expected {wanted}, got {output}")),
        (Outcome::Succeeded(output), None) => problems.push(format!("expected a failure, got output {output}")),
        (Outcome::Failed { error, cause }, None) => {
            if Some(error.as_str()) != expect["error"].as_str() {
                problems.push(format!("error: expected {}, got {error:?} ({cause:?})", expect["error"]));
            }
            if let Some(wanted) = expect["cause"].as_str()
                && cause.as_deref() != Some(wanted)
            {
                problems.push(format!("cause: expected {wanted:?}, got {cause:?}"));
            }
            if let Some(part) = expect["cause_contains"].as_str()
                && !cause.as_deref().is_some_and(|c| c.contains(part))
            {
                problems.push(format!("cause: expected it to contain {part:?}, got {cause:?}"));
            }
        }
        (Outcome::Failed { error, cause }, Some(_)) => problems.push(format!("failed with {error}: {cause:?}")),
    }
}

/// The expected event types, and what holds of every history: ids count
/// from 1, each event follows an earlier one, time never goes backwards.
fn check_history(expect: &Value, history: &[sluice_asl::HistoryEvent], end: SystemTime, problems: &mut Vec<String>) {
    if let Some(wanted) = expect["history"].as_array() {
        let types: Vec<Value> = history.iter().map(|e| json!(e.event_type.name())).collect();
        if &types != wanted {
            problems.push(format!("history: expected {}, got {}", Value::Array(wanted.clone()), Value::Array(types)));
        }
    }
    for (i, event) in history.iter().enumerate() {
        let ok = event.id == i as u64 + 1
            && (i == 0 || event.previous_event_id < event.id)
            && (i == 0 || history[i - 1].timestamp <= event.timestamp)
            && event.timestamp <= end;
        if !ok {
            problems.push(format!("history event {} is out of order: {:?}", i + 1, event));
        }
    }
    if history.first().map(|e| e.event_type.name()) != Some("ExecutionStarted") {
        problems.push("history does not start with ExecutionStarted".to_owned());
    }
}
