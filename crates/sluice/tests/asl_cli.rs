//! `sluice asl validate` and `sluice asl run` as a user runs them.

use std::path::PathBuf;
use std::process::{Command, Output};

const SHOP: &str = r#"{
  "StartAt": "Fetch",
  "States": {
    "Fetch": {
      "Type": "Task",
      "Resource": "arn:aws:states:::lambda:invoke",
      "Parameters": {"FunctionName": "${FetchFunction}", "Payload.$": "$"},
      "OutputPath": "$.Payload",
      "Catch": [{"ErrorEquals": ["Sluice.NotFound"], "ResultPath": "$.error", "Next": "Gone"}],
      "Next": "Done"
    },
    "Gone": {"Type": "Pass", "Parameters": {"gone.$": "$.shop"}, "End": true},
    "Done": {"Type": "Succeed"}
  }
}"#;

/// Writes a definition to a file of this test's own.
fn definition(test: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sluice-asl-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{test}.asl.json"));
    std::fs::write(&path, text).unwrap();
    path
}

fn sluice(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sluice")).args(args).output().expect("run sluice")
}

/// `sluice asl run` on [`SHOP`] (written for `test`), its placeholder
/// filled, with `extra` arguments.
fn run_shop(test: &str, extra: &[&str]) -> Output {
    let file = definition(test, SHOP);
    let mut args = vec!["asl", "run", file.to_str().unwrap(), "--sub", "FetchFunction=fetch"];
    args.extend_from_slice(extra);
    sluice(&args)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn validate_accepts_a_valid_definition_and_lists_its_task_targets() {
    let file = definition("valid", SHOP);
    let out = sluice(&["asl", "validate", file.to_str().unwrap(), "--sub", "FetchFunction=fetch"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("valid") && stdout.contains("task targets: fetch"), "{stdout}");
}

#[test]
fn validate_names_each_problem_and_exits_2() {
    let file = definition(
        "invalid",
        r#"{"StartAt": "A", "States": {"A": {"Type": "Pass", "Next": "Nowhere"},
            "B": {"Type": "Map", "ItemReader": {}, "ItemProcessor": {"StartAt": "C", "States": {"C": {"Type": "Succeed"}}}, "End": true}}}"#,
    );
    let out = sluice(&["asl", "validate", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(stderr.contains(r#"state "A", field "Next": there is no state named "Nowhere""#), "{stderr}");
    assert!(stderr.contains(r#"state "B", field "ItemReader": not supported"#), "{stderr}");
}

#[test]
fn validate_refuses_a_placeholder_without_a_value() {
    let file = definition("placeholder", SHOP);
    let out = sluice(&["asl", "validate", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--sub FetchFunction="), "{}", text(&out.stderr));
}

#[test]
fn run_prints_the_output_of_a_successful_execution() {
    let out = run_shop("run_echo", &["--input", r#"{"shop": "a"}"#, "--task", "fetch=echo"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let output: serde_json::Value = serde_json::from_slice(&out.stdout).expect("the output is JSON");
    assert_eq!(output, serde_json::json!({"shop": "a"}));
}

#[test]
fn run_follows_a_catch_and_a_failure_exits_1_with_error_and_cause() {
    let caught = run_shop("run_fail", &["--input", r#"{"shop": "a"}"#, "--task", "fetch=fail:Sluice.NotFound"]);
    assert_eq!(caught.status.code(), Some(0), "{}", text(&caught.stderr));
    assert_eq!(serde_json::from_slice::<serde_json::Value>(&caught.stdout).unwrap(), serde_json::json!({"gone": "a"}));
    let failed = run_shop("run_fail", &["--task", "fetch=fail:Sluice.LockBusy"]);
    assert_eq!(failed.status.code(), Some(1));
    let output: serde_json::Value = serde_json::from_slice(&failed.stdout).expect("the failure is JSON");
    assert_eq!(output["Error"], "Sluice.LockBusy");
    let cause: serde_json::Value = serde_json::from_str(output["Cause"].as_str().unwrap()).unwrap();
    assert_eq!(cause["errorType"], "Sluice.LockBusy", "the cause is Lambda's error document");
    assert!(text(&failed.stderr).contains("failed with \"Sluice.LockBusy\""));
}

#[test]
fn run_with_history_prints_step_functions_event_names() {
    let out = run_shop("run_history", &["--task", "fetch=echo", "--history"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let types: Vec<&str> = stdout.lines().skip(1).filter_map(|l| l.split_whitespace().nth(3)).collect();
    assert_eq!(
        &types[..9],
        [
            "ExecutionStarted",
            "TaskStateEntered",
            "TaskScheduled",
            "TaskStarted",
            "TaskSucceeded",
            "TaskStateExited",
            "SucceedStateEntered",
            "SucceedStateExited",
            "ExecutionSucceeded"
        ],
        "{stdout}"
    );
}

#[test]
fn run_refuses_missing_tasks_and_bad_input_with_exit_2() {
    let missing = run_shop("run_bad", &[]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(text(&missing.stderr).contains("\"fetch\", which no --task gives"), "{}", text(&missing.stderr));
    let bad_input = run_shop("run_bad", &["--task", "fetch=echo", "--input", "{oops"]);
    assert_eq!(bad_input.status.code(), Some(2));
    assert!(text(&bad_input.stderr).contains("--input is not JSON"));
    let file = definition("run_bad", SHOP);
    let bad_task = sluice(&["asl", "run", file.to_str().unwrap(), "--task", "fetch=sleep"]);
    assert_eq!(bad_task.status.code(), Some(2));
    assert!(text(&bad_task.stderr).contains("--task"));
    let no_file = sluice(&["asl", "run", "/nonexistent/x.asl.json"]);
    assert_eq!(no_file.status.code(), Some(2));
    assert!(text(&no_file.stderr).contains("cannot read /nonexistent/x.asl.json"));
}
