//! The SAM template and the code agree: every `${…}` placeholder in a
//! state machine definition is one of the template's
//! `DefinitionSubstitutions` (and every substitution is used), and every
//! function the template builds is a crate in `functions/`, and every crate
//! there is deployed. A mismatch would deploy a state machine calling
//! nothing, or a function built from nowhere.
//!
//! The template is read as text: CloudFormation's `!Ref`/`!GetAtt` tags
//! are not plain YAML, and the two things checked have a fixed shape.

use std::collections::BTreeSet;
use std::path::Path;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap()
}

fn template() -> String {
    std::fs::read_to_string(root().join("infra/template.yaml")).expect("infra/template.yaml")
}

/// The keys of the block under `DefinitionSubstitutions:`.
fn substitutions(template: &str) -> BTreeSet<String> {
    let mut lines = template.lines().skip_while(|l| l.trim() != "DefinitionSubstitutions:");
    let header = lines.next().expect("a DefinitionSubstitutions block");
    let indent = header.len() - header.trim_start().len();
    lines
        .take_while(|l| l.len() - l.trim_start().len() > indent)
        .filter_map(|l| l.trim().split_once(':').map(|(k, _)| k.to_owned()))
        .collect()
}

/// `${Name}` placeholders of one definition.
fn placeholders(text: &str) -> BTreeSet<String> {
    text.split("${").skip(1).filter_map(|rest| rest.split_once('}').map(|(name, _)| name.to_owned())).collect()
}

/// The binaries the template builds (`BuildProperties: Binary: …`).
fn built_binaries(template: &str) -> BTreeSet<String> {
    template.lines().filter_map(|l| l.trim().strip_prefix("Binary:").map(|b| b.trim().to_owned())).collect()
}

/// The package names of the crates in `functions/`.
fn function_crates() -> BTreeSet<String> {
    std::fs::read_dir(root().join("functions"))
        .unwrap()
        .filter_map(|entry| std::fs::read_to_string(entry.ok()?.path().join("Cargo.toml")).ok())
        .filter_map(|manifest| {
            manifest.lines().find_map(|l| l.strip_prefix("name = ").map(|n| n.trim_matches('"').to_owned()))
        })
        .collect()
}

#[test]
fn every_placeholder_is_substituted_and_every_substitution_used() {
    let template = template();
    let subs = substitutions(&template);
    assert!(!subs.is_empty());
    let mut used = BTreeSet::new();
    for entry in std::fs::read_dir(root().join("statemachine")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            used.extend(placeholders(&std::fs::read_to_string(&path).unwrap()));
        }
    }
    let missing: Vec<_> = used.difference(&subs).collect();
    assert!(missing.is_empty(), "placeholders without a DefinitionSubstitution: {missing:?}");
    let unused: Vec<_> = subs.difference(&used).collect();
    assert!(unused.is_empty(), "substitutions no definition uses: {unused:?}");
}

#[test]
fn every_deployed_function_is_a_crate_and_every_crate_is_deployed() {
    let built = built_binaries(&template());
    let crates = function_crates();
    assert!(crates.len() >= 8, "{crates:?}");
    assert_eq!(built, crates, "template binaries vs functions/ crates");
}

#[test]
fn the_readers_see_what_they_should() {
    let sample = "    DefinitionSubstitutions:\n      A: !GetAtt A.Arn\n      B: x\n    Logging:\n";
    assert_eq!(substitutions(sample), BTreeSet::from(["A".to_owned(), "B".to_owned()]));
    assert_eq!(placeholders(r#"{"F": "${A}", "G": "${B}x"}"#), BTreeSet::from(["A".to_owned(), "B".to_owned()]));
}

/// The dashboard body (a `!Sub` block) is JSON once its `${…}` are filled:
/// CloudFormation would only refuse it at deploy time.
#[test]
fn the_dashboard_body_is_json() {
    let template = template();
    let start = template.find("DashboardBody: !Sub").expect("a dashboard");
    let lines: Vec<&str> = template[start..].lines().skip(2).collect();
    let indent = lines[0].len() - lines[0].trim_start().len();
    let body: Vec<&str> =
        lines.iter().take_while(|l| l.len() - l.trim_start().len() >= indent).map(|l| &l[indent..]).collect();
    let mut text = body.join("\n");
    while let Some(open) = text.find("${") {
        let close = open + text[open..].find('}').expect("a closed placeholder");
        text.replace_range(open..=close, "X");
    }
    let dashboard: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}:\n{text}"));
    assert!(dashboard["widgets"].as_array().is_some_and(|w| w.len() >= 4));
}
