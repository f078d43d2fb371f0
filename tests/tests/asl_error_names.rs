//! Every error name a state machine matches in `ErrorEquals` is one sluice
//! defines (`sluice_domain::ErrorKind`) or one AWS predefines, and none is
//! a terminal error (`sluice_domain::TERMINAL_ERRORS`: the payload limit's
//! `States.DataLimitExceeded`, `States.Runtime`). A misspelt name would
//! make a Retry or Catch silently never match; a terminal one never
//! matches either, and would suggest the definition handles what it cannot.

use serde_json::Value;
use sluice_domain::{TERMINAL_ERRORS, is_known_error_name};
use std::path::Path;

/// The `ErrorEquals` names in a definition that are neither ours nor AWS's,
/// or that are terminal (no Retry or Catch ever matches them), with the
/// state that uses each.
fn unknown_error_names(definition: &Value) -> Vec<String> {
    let mut unknown = Vec::new();
    walk(definition, "", &mut unknown);
    unknown
}

fn walk(value: &Value, state: &str, unknown: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::Array(names)) = map.get("ErrorEquals") {
                for name in names {
                    match name.as_str() {
                        Some(n) if is_known_error_name(n) && !TERMINAL_ERRORS.contains(&n) => {}
                        _ => unknown.push(format!("{state}: {name}")),
                    }
                }
            }
            for (key, child) in map {
                // Inside "States", each key names a state.
                let inner = if map.contains_key("Type") || key == "States" { state } else { key };
                walk(child, inner, unknown);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| walk(v, state, unknown)),
        _ => {}
    }
}

#[test]
fn every_statemachine_uses_only_defined_error_names() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../statemachine");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).expect("statemachine/ exists") {
        let path = entry.expect("dir entry").path();
        if !path.to_string_lossy().ends_with(".asl.json") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("read definition");
        let definition: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let unknown = unknown_error_names(&definition);
        assert!(unknown.is_empty(), "{} matches undefined or terminal errors: {unknown:?}", path.display());
        checked += 1;
    }
    eprintln!("checked {checked} state machine(s) in {}", dir.display());
}

#[test]
fn the_check_catches_a_misspelt_name() {
    let definition = serde_json::json!({
        "StartAt": "Fetch",
        "States": {
            "Fetch": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke",
                "Retry": [{ "ErrorEquals": ["Sluice.UpstreamThrottled", "States.Timeout"] }],
                "Catch": [{ "ErrorEquals": ["Sluice.RateLimitted"], "Next": "Failed" }],
                "End": true
            },
            "Failed": { "Type": "Fail" }
        }
    });
    assert_eq!(unknown_error_names(&definition), vec![r#"Fetch: "Sluice.RateLimitted""#.to_owned()]);
}

#[test]
fn the_check_refuses_a_terminal_error_that_no_catcher_can_handle() {
    let definition = serde_json::json!({
        "StartAt": "Fetch",
        "States": {
            "Fetch": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke",
                "Catch": [{ "ErrorEquals": ["States.DataLimitExceeded"], "Next": "Failed" }],
                "End": true
            },
            "Failed": { "Type": "Fail" }
        }
    });
    assert_eq!(unknown_error_names(&definition), vec![r#"Fetch: "States.DataLimitExceeded""#.to_owned()]);
}
