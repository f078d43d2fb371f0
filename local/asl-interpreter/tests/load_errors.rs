//! Every construct this interpreter does not implement, and every
//! definition error Step Functions refuses, is a load error naming the
//! state (with its path inside Map and Parallel states) and the field.

use serde_json::{Value, json};
use sluice_asl::{LoadError, StateMachine, Substitutions};

fn load_error(definition: Value) -> LoadError {
    match StateMachine::load(&definition.to_string(), &Substitutions::new()) {
        Ok(_) => panic!("loaded, but should not have: {definition}"),
        Err(e) => e,
    }
}

/// Asserts that some problem names `state` and `field` and says `says`.
fn assert_problem(error: &LoadError, state: Option<&str>, field: Option<&str>, says: &str) {
    let found = error
        .problems
        .iter()
        .any(|p| p.state.as_deref() == state && p.field.as_deref() == field && p.message.contains(says));
    assert!(found, "no problem for state {state:?}, field {field:?} saying {says:?} in:\n{error}");
}

/// One Task state named "Work" with extra fields.
fn task_with(extra: Value) -> Value {
    let mut task = json!({"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
        "Parameters": {"FunctionName": "work", "Payload.$": "$"}, "End": true});
    task.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    json!({"StartAt": "Work", "States": {"Work": task}})
}

/// One inline Map state named "Process" with extra fields.
fn map_with(extra: Value) -> Value {
    let mut map = json!({"Type": "Map", "ItemsPath": "$.items", "End": true,
        "ItemProcessor": {"StartAt": "Fetch", "States": {"Fetch": {"Type": "Pass", "End": true}}}});
    map.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    json!({"StartAt": "Process", "States": {"Process": map}})
}

macro_rules! unsupported {
    ($($test:ident: $definition:expr => $state:expr, $field:expr, $says:expr;)*) => {$(
        #[test]
        fn $test() {
            let error = load_error($definition);
            assert_problem(&error, $state, Some($field), "not supported");
            assert_problem(&error, $state, Some($field), $says);
        }
    )*};
}

unsupported! {
    jsonata_query_language_is_refused:
        json!({"QueryLanguage": "JSONata", "StartAt": "A", "States": {"A": {"Type": "Succeed"}}}) => None, "QueryLanguage", "JSONPath";
    jsonata_on_one_state_is_refused:
        json!({"StartAt": "A", "States": {"A": {"Type": "Pass", "QueryLanguage": "JSONata", "End": true}}}) => Some("A"), "QueryLanguage", "JSONPath";
    jsonata_arguments_are_refused: task_with(json!({"Arguments": {"x": "{% $states.input %}"}})) => Some("Work"), "Arguments", "JSONata";
    jsonata_output_is_refused: task_with(json!({"Output": "{% $states.result %}"})) => Some("Work"), "Output", "JSONata";
    variables_are_refused: task_with(json!({"Assign": {"count": 1}})) => Some("Work"), "Assign", "variables";
    heartbeats_are_refused: task_with(json!({"HeartbeatSeconds": 60})) => Some("Work"), "HeartbeatSeconds", "heartbeats";
    heartbeat_paths_are_refused: task_with(json!({"HeartbeatSecondsPath": "$.beat"})) => Some("Work"), "HeartbeatSecondsPath", "heartbeats";
    credentials_are_refused: task_with(json!({"Credentials": {"RoleArn": "arn:aws:iam::1:role/x"}})) => Some("Work"), "Credentials", "credentials";
    timeout_paths_are_refused: task_with(json!({"TimeoutSecondsPath": "$.timeout"})) => Some("Work"), "TimeoutSecondsPath", "TimeoutSeconds";
    distributed_map_mode_is_refused: map_with(json!({"ItemProcessor": {"ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "EXPRESS"},
        "StartAt": "Fetch", "States": {"Fetch": {"Type": "Pass", "End": true}}}})) => Some("Process"), "ItemProcessor.ProcessorConfig.Mode", "Distributed Map";
    item_reader_is_refused: map_with(json!({"ItemReader": {"Resource": "arn:aws:states:::s3:getObject"}})) => Some("Process"), "ItemReader", "Distributed Map";
    item_batcher_is_refused: map_with(json!({"ItemBatcher": {"MaxItemsPerBatch": 10}})) => Some("Process"), "ItemBatcher", "Distributed Map";
    result_writer_is_refused: map_with(json!({"ResultWriter": {"Resource": "arn:aws:states:::s3:putObject"}})) => Some("Process"), "ResultWriter", "Distributed Map";
    tolerated_failure_percentage_is_refused: map_with(json!({"ToleratedFailurePercentage": 5})) => Some("Process"), "ToleratedFailurePercentage", "Distributed Map";
    tolerated_failure_count_is_refused: map_with(json!({"ToleratedFailureCount": 2})) => Some("Process"), "ToleratedFailureCount", "Distributed Map";
    map_run_labels_are_refused: map_with(json!({"Label": "ProcessNOAAData"})) => Some("Process"), "Label", "Distributed Map";
    callbacks_are_refused: json!({"StartAt": "Work", "States": {"Work": {"Type": "Task",
        "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken", "End": true}}}) => Some("Work"), "Resource", "waitForTaskToken";
}

#[test]
fn max_concurrency_and_its_path_are_refused_together() {
    let error = load_error(map_with(json!({"MaxConcurrency": 2, "MaxConcurrencyPath": "$.limit"})));
    assert_problem(&error, Some("Process"), Some("MaxConcurrencyPath"), "cannot both be given");
}

#[test]
fn an_unknown_field_is_named() {
    let error = load_error(task_with(json!({"ResultPth": "$.x"})));
    assert_problem(&error, Some("Work"), Some("ResultPth"), "unknown field for a Task state");
}

#[test]
fn a_next_target_that_does_not_exist_is_named() {
    let error = load_error(json!({"StartAt": "A", "States": {"A": {"Type": "Pass", "Next": "Nowhere"}}}));
    assert_problem(&error, Some("A"), Some("Next"), "no state named \"Nowhere\"");
    let error = load_error(json!({"StartAt": "Missing", "States": {"A": {"Type": "Succeed"}}}));
    assert_problem(&error, None, Some("StartAt"), "no state named \"Missing\"");
}

#[test]
fn an_unreachable_state_is_named() {
    let error =
        load_error(json!({"StartAt": "A", "States": {"A": {"Type": "Succeed"}, "Orphan": {"Type": "Succeed"}}}));
    assert_problem(&error, Some("Orphan"), None, "not reachable from StartAt \"A\"");
}

#[test]
fn a_state_without_an_end_is_named() {
    let error = load_error(json!({"StartAt": "A", "States": {"A": {"Type": "Pass"}}}));
    assert_problem(&error, Some("A"), Some("Next"), "must have Next or \"End\": true");
    let error = load_error(
        json!({"StartAt": "A", "States": {"A": {"Type": "Pass", "Next": "B", "End": true}, "B": {"Type": "Succeed"}}}),
    );
    assert_problem(&error, Some("A"), Some("End"), "cannot both be given");
    let error = load_error(json!({"StartAt": "A", "States": {"A": {"Type": "Succeed", "End": true}}}));
    assert_problem(&error, Some("A"), Some("End"), "cannot have Next or End");
}

#[test]
fn bad_paths_are_named_with_their_field() {
    let error = load_error(task_with(json!({"InputPath": "lambda"})));
    assert_problem(&error, Some("Work"), Some("InputPath"), "must start with '$'");
    let error = load_error(task_with(json!({"OutputPath": "$.a[?(@.b ==]"})));
    assert_problem(&error, Some("Work"), Some("OutputPath"), "not a valid JSONPath");
    let error = load_error(task_with(json!({"ResultPath": "$.items[*]"})));
    assert_problem(&error, Some("Work"), Some("ResultPath"), "not a Reference Path");
    let error = load_error(task_with(json!({"Parameters": {"FunctionName": "work", "Payload": {"id.$": "id"}}})));
    assert_problem(&error, Some("Work"), Some("Parameters.Payload.id.$"), "neither a Path");
    let error = load_error(task_with(json!({"ResultSelector": {"n.$": "States.ArrayLength()"}})));
    assert_problem(&error, Some("Work"), Some("ResultSelector.n.$"), "takes 1 argument");
    let error = load_error(task_with(json!({"ResultSelector": {"n.$": "States.Nope($)"}})));
    assert_problem(&error, Some("Work"), Some("ResultSelector.n.$"), "unknown intrinsic function");
}

#[test]
fn states_all_must_be_alone_and_last() {
    let error = load_error(task_with(
        json!({"Retry": [{"ErrorEquals": ["States.ALL"]}, {"ErrorEquals": ["Sluice.LockBusy"]}]}),
    ));
    assert_problem(&error, Some("Work"), Some("Retry[0].ErrorEquals"), "last retrier or catcher");
    let error =
        load_error(task_with(json!({"Catch": [{"ErrorEquals": ["States.ALL", "States.Timeout"], "Next": "Work"}]})));
    assert_problem(&error, Some("Work"), Some("Catch[0].ErrorEquals"), "alone");
    let error = load_error(task_with(json!({"Retry": [{"ErrorEquals": ["States.Timout"]}]})));
    assert_problem(&error, Some("Work"), Some("Retry[0].ErrorEquals"), "not a predefined error name");
}

#[test]
fn nested_states_are_named_by_their_path() {
    let error = load_error(map_with(json!({"ItemProcessor": {"StartAt": "Fetch",
        "States": {"Fetch": {"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage", "HeartbeatSeconds": 5, "End": true}}}})));
    assert_problem(&error, Some("Process / ItemProcessor / Fetch"), Some("HeartbeatSeconds"), "not supported");
    let error =
        load_error(json!({"StartAt": "Verify", "States": {"Verify": {"Type": "Parallel", "End": true, "Branches": [
        {"StartAt": "A", "States": {"A": {"Type": "Succeed"}}},
        {"StartAt": "B", "States": {"B": {"Type": "Pass", "Next": "A"}}}]}}}));
    assert_problem(&error, Some("Verify / Branches[1] / B"), Some("Next"), "no state named \"A\"");
}

#[test]
fn every_problem_is_reported_at_once() {
    let error = load_error(json!({"StartAt": "A", "States": {
        "A": {"Type": "Pass", "InputPath": "x", "Next": "B"},
        "B": {"Type": "Wait", "End": true},
        "C": {"Type": "Teleport"}}}));
    assert_problem(&error, Some("A"), Some("InputPath"), "must start with '$'");
    assert_problem(&error, Some("B"), Some("Seconds"), "exactly one of Seconds");
    assert_problem(&error, Some("C"), Some("Type"), "not a state type");
    assert!(error.problems.len() >= 3, "{error}");
}

#[test]
fn lambda_invoke_needs_a_function_name() {
    let error = load_error(
        json!({"StartAt": "A", "States": {"A": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "End": true}}}),
    );
    assert_problem(&error, Some("A"), Some("Parameters"), "FunctionName");
}

#[test]
fn a_definition_that_is_not_json_says_so() {
    let error = StateMachine::load("{\"StartAt\": ", &Substitutions::new()).unwrap_err();
    assert!(error.to_string().contains("not valid JSON"), "{error}");
}
