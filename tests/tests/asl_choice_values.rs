//! The strings the state machine routes on are the enums the steps write
//! them from. A Choice state of `statemachine/pipeline.asl.json` compares
//! a step's output with `StringEquals`; the step writes that field from a
//! serde enum (`ItemPlan.kind` from `ItemKind`, `FetchOutput.outcome` from
//! `FetchNext`). Neither side sees the other at build time: a variant
//! without a branch silently takes the Choice's `Default`, and a branch
//! for a name no step writes (a typo, a rename) never matches. So, for each
//! routed field, the names its Choice rules compare it with must be its
//! variants as serialised, except those this file names as meant for the
//! `Default`, each with why.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde::de::value::{Error as ValueError, U32Deserializer};
use serde_json::Value;
use sluice_pipeline::step_io::{FetchNext, ItemKind};
use std::collections::BTreeSet;
use std::path::Path;

/// One field the definition routes on, and what the code writes there.
struct Routed {
    /// The Choice rules' `Variable`.
    variable: &'static str,
    /// Every variant, serialised.
    variants: BTreeSet<String>,
    /// The variants with no branch of their own, which their Choice's
    /// `Default` handles, and why that is right.
    by_default: Vec<(String, &'static str)>,
}

impl Routed {
    /// `all` is the enum's `ALL`, checked here to be every variant.
    fn new<T>(variable: &'static str, all: &[T], by_default: &[(T, &'static str)]) -> Self
    where
        T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug,
    {
        assert_eq!(all, declared::<T>().as_slice(), "{variable}: ALL must list every variant, in declaration order");
        let by_default = by_default.iter().map(|(v, why)| (name(v), *why)).collect();
        Self { variable, variants: all.iter().map(name).collect(), by_default }
    }
}

/// Every variant of a unit-only enum, in declaration order. Serde's
/// derive numbers the variants from 0 and reads one from its number, so
/// this asks for 0, 1, 2… until there is none: unlike `ALL`, typed by
/// hand, it cannot miss a variant added later.
fn declared<T: DeserializeOwned>() -> Vec<T> {
    (0u32..).map_while(|i| T::deserialize(U32Deserializer::<ValueError>::new(i)).ok()).collect()
}

/// A variant as the definition sees it.
fn name<T: Serialize>(variant: &T) -> String {
    match serde_json::to_value(variant) {
        Ok(Value::String(name)) => name,
        other => panic!("a routed variant serialises to a string, not {other:?}"),
    }
}

/// The fields the definition routes on, each with its Default variants.
fn routed() -> Vec<Routed> {
    vec![
        Routed::new(
            "$.item.kind",
            &ItemKind::ALL,
            &[(ItemKind::Invalid, "not a work item: Route's Default, NotAWorkItem, fails it with its reason")],
        ),
        Routed::new(
            "$.fetch.outcome",
            &FetchNext::ALL,
            &[(FetchNext::Fetched, "the common case, the one with a snapshot: Fetched's Default goes on to Store")],
        ),
    ]
}

/// A Choice state: its name, its rules, whether it has a `Default`.
struct Choice<'a> {
    state: String,
    rules: Vec<&'a Value>,
    has_default: bool,
}

/// Every Choice state of a `States` map and of the machines nested in it
/// (a Map's `ItemProcessor` or older `Iterator`, a Parallel's `Branches`).
fn choices<'a>(states: &'a Value, path: &str, found: &mut Vec<Choice<'a>>) {
    let Some(states) = states.as_object() else { return };
    for (name, state) in states {
        let here = format!("{path}{name}");
        if state["Type"] == "Choice" {
            let rules = state["Choices"].as_array().map(|r| r.iter().collect()).unwrap_or_default();
            found.push(Choice { state: here.clone(), rules, has_default: state.get("Default").is_some() });
        }
        for nested in ["ItemProcessor", "Iterator"] {
            choices(&state[nested]["States"], &format!("{here}/"), found);
        }
        for branch in state["Branches"].as_array().into_iter().flatten() {
            choices(&branch["States"], &format!("{here}/"), found);
        }
    }
}

/// A rule's string comparisons, `(Variable, operator, value)`, including
/// those inside `And`, `Or` and `Not`.
fn string_tests<'a>(rule: &'a Value, out: &mut Vec<(&'a str, &'a str, &'a Value)>) {
    for nested in rule["And"].as_array().into_iter().chain(rule["Or"].as_array()).flatten() {
        string_tests(nested, out);
    }
    if rule.get("Not").is_some() {
        string_tests(&rule["Not"], out);
    }
    let (Some(variable), Some(rule)) = (rule["Variable"].as_str(), rule.as_object()) else { return };
    for (operator, value) in rule.iter().filter(|(op, _)| op.starts_with("String")) {
        out.push((variable, operator, value));
    }
}

/// What is wrong between a definition and the routed fields, one line each.
fn problems(definition: &Value, routed: &[Routed]) -> BTreeSet<String> {
    let mut found = Vec::new();
    choices(&definition["States"], "", &mut found);
    let mut problems = BTreeSet::new();
    let mut compared: Vec<BTreeSet<&str>> = vec![BTreeSet::new(); routed.len()];
    for choice in &found {
        let mut tests = Vec::new();
        choice.rules.iter().for_each(|rule| string_tests(rule, &mut tests));
        for (variable, operator, value) in tests {
            let state = &choice.state;
            let Some(i) = routed.iter().position(|r| r.variable == variable) else {
                problems.insert(format!("{state}: {variable} is compared as a string, but no enum is routed there"));
                continue;
            };
            match (operator, value.as_str()) {
                ("StringEquals", Some(value)) => compared[i].insert(value),
                _ => problems.insert(format!("{state}: {variable} {operator}: only StringEquals is checked")),
            };
            if !routed[i].by_default.is_empty() && !choice.has_default {
                problems.insert(format!("{state}: {variable} has variants meant for a Default, and there is none"));
            }
        }
    }
    for (field, compared) in routed.iter().zip(compared) {
        let variable = field.variable;
        for variant in &field.variants {
            let by_default = field.by_default.iter().find(|(v, _)| v == variant);
            match (compared.contains(variant.as_str()), by_default) {
                (true, None) | (false, Some(_)) => {}
                (false, None) => {
                    problems.insert(format!("{variable}: {variant:?} has no branch, nor a reason to take the Default"));
                }
                (true, Some((_, why))) => {
                    problems.insert(format!("{variable}: {variant:?} has a branch, yet is listed for Default ({why})"));
                }
            }
        }
        for unknown in compared.iter().filter(|name| !field.variants.contains(**name)) {
            problems.insert(format!("{variable}: a branch compares it with {unknown:?}, which no variant writes"));
        }
    }
    problems
}

fn pipeline() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../statemachine/pipeline.asl.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn every_routed_string_is_a_variant_and_every_variant_is_routed() {
    let problems: Vec<String> = problems(&pipeline(), &routed()).into_iter().collect();
    assert!(problems.is_empty(), "statemachine/pipeline.asl.json against the step enums:\n{}", problems.join("\n"));
}

/// The check itself, on copies of the definition broken on purpose: a
/// branch removed, a branch for a name no variant writes, and a string
/// comparison on a field that has no enum (nested in an `And`, inside a
/// Map, as the real ones are).
#[test]
fn the_check_catches_a_missing_branch_an_unknown_name_and_an_unrouted_field() {
    let fetched = "/States/ProcessGroups/ItemProcessor/States/ProcessItem/Branches/0/States/Fetched/Choices";
    let mut definition = pipeline();
    let rules = definition.pointer_mut(fetched).and_then(Value::as_array_mut).expect("the Fetched Choice");
    let held = rules.iter().position(|r| r["StringEquals"] == "held").expect("a held branch");
    rules.remove(held);
    rules.push(serde_json::json!({"Variable": "$.fetch.outcome", "StringEquals": "fetchd", "Next": "Store"}));
    rules.push(serde_json::json!({
        "And": [{"Variable": "$.snapshot.status", "StringEquals": "deleted"}, {"Variable": "$.refreshed", "BooleanEquals": true}],
        "Next": "Store"
    }));
    let problems = problems(&definition, &routed());
    let expected = [
        r#"$.fetch.outcome: "held" has no branch, nor a reason to take the Default"#,
        r#"$.fetch.outcome: a branch compares it with "fetchd""#,
        "Fetched: $.snapshot.status is compared as a string, but no enum is routed there",
    ];
    for line in expected {
        assert!(problems.iter().any(|p| p.contains(line)), "{line:?} not in {problems:#?}");
    }
    assert_eq!(problems.len(), expected.len(), "{problems:#?}");
}
