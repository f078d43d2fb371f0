//! `docs/architecture.md` names, hop by hop, the file that does each step
//! and the states of `statemachine/pipeline.asl.json` an event goes
//! through. This check fails when the page names a file that no longer
//! exists or a state the definition no longer has, so a rename or a move
//! cannot leave the page pointing at nothing.
//!
//! What the page claims, outside fenced blocks (the Mermaid diagram):
//!
//! - a **path**: an inline code span with no space, no `:{}<>$|"` (key
//!   patterns, ids, URLs) and not starting with `/` (a route), that holds a
//!   `/` or ends in a file extension; or a link's target, relative to
//!   `docs/`. Each must exist, from the repository root.
//! - a **name**: an inline code span that is one CamelCase word
//!   (`PlanBatch`, `EventsQueue`). Each must be a state of the definition,
//!   or a parameter or resource of `infra/template.yaml`.

use serde_json::Value;
use sluice_tests::template::{block, parameters, root, template};
use std::collections::BTreeSet;
use std::path::Path;

const PAGE: &str = "docs/architecture.md";
const DEFINITION: &str = "statemachine/pipeline.asl.json";

/// A file name ending that makes a code span a path even without a `/`.
const EXTENSIONS: [&str; 10] = [".rs", ".lua", ".json", ".yaml", ".yml", ".toml", ".md", ".sql", ".sh", ".guard"];

/// What the page claims, and what of it is wrong.
#[derive(Debug, Default)]
struct Checked {
    paths: BTreeSet<String>,
    states: BTreeSet<String>,
    template_names: BTreeSet<String>,
    problems: Vec<String>,
}

/// The page's text outside fenced code blocks.
fn prose(page: &str) -> String {
    let mut fenced = false;
    let mut out = String::new();
    for line in page.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The inline code spans of `prose` (a span may run over a line break),
/// or `None` when a backtick is left unclosed.
fn code_spans(prose: &str) -> Option<Vec<&str>> {
    let parts: Vec<&str> = prose.split('`').collect();
    (parts.len() % 2 == 1).then(|| parts.into_iter().skip(1).step_by(2).collect())
}

/// The targets of the Markdown links in `prose`: `[text](target)`.
fn link_targets(prose: &str) -> Vec<&str> {
    prose.split("](").skip(1).filter_map(|rest| rest.split_once(')').map(|(target, _)| target)).collect()
}

/// `span` as a repository path, if it reads as one.
fn as_path(span: &str) -> Option<&str> {
    let excluded = |c: char| c.is_whitespace() || ":{}<>$|\"".contains(c);
    if span.is_empty() || span.starts_with('/') || span.chars().any(excluded) {
        return None;
    }
    (span.contains('/') || EXTENSIONS.iter().any(|e| span.ends_with(e))).then_some(span)
}

/// One CamelCase word: a state or template name by the page's convention.
fn is_name(span: &str) -> bool {
    span.starts_with(|c: char| c.is_ascii_uppercase())
        && span.chars().all(|c| c.is_ascii_alphanumeric())
        && span.chars().any(|c| c.is_ascii_lowercase())
}

/// Every state name in a definition, nested ones (Map, Parallel) included.
fn state_names(value: &Value, names: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::Object(states)) = map.get("States") {
                names.extend(states.keys().cloned());
            }
            map.values().for_each(|v| state_names(v, names));
        }
        Value::Array(items) => items.iter().for_each(|v| state_names(v, names)),
        _ => {}
    }
}

/// The template's parameters and resources, by logical id.
fn template_names(template: &str) -> BTreeSet<String> {
    let resources = block(template, "Resources:")
        .into_iter()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   ") && l.trim_end().ends_with(':'))
        .filter(|l| !l.trim_start().starts_with('#'))
        .map(|l| l.trim().trim_end_matches(':').to_owned());
    parameters(template).into_iter().chain(resources).collect()
}

/// Checks `page` against the files under `root`, the definition's
/// `states` and the template's `names`.
fn check(page: &str, root: &Path, states: &BTreeSet<String>, names: &BTreeSet<String>) -> Checked {
    let mut checked = Checked::default();
    let prose = prose(page);
    let Some(spans) = code_spans(&prose) else {
        checked.problems.push("a backtick is left unclosed: the code spans after it cannot be read".into());
        return checked;
    };
    for span in spans {
        if let Some(path) = as_path(span) {
            if !root.join(path).exists() {
                checked.problems.push(format!("`{path}`: no such file or directory from the repository root"));
            }
            checked.paths.insert(path.to_owned());
        } else if is_name(span) {
            if states.contains(span) {
                checked.states.insert(span.to_owned());
            } else if names.contains(span) {
                checked.template_names.insert(span.to_owned());
            } else {
                checked.problems.push(format!(
                    "`{span}`: neither a state of {DEFINITION} nor a parameter or resource of infra/template.yaml \
                     (write anything else without backticks)"
                ));
            }
        }
    }
    for target in link_targets(&prose) {
        if target.starts_with("http://") || target.starts_with("https://") || target.starts_with('#') {
            continue;
        }
        let file = target.split('#').next().unwrap_or(target);
        let path = root.join("docs").join(file);
        if !path.exists() {
            checked.problems.push(format!("link ({target}): no such file from docs/"));
        }
        let from_root = path.strip_prefix(root).map(|p| p.display().to_string()).unwrap_or_else(|_| file.to_owned());
        checked.paths.insert(from_root);
    }
    checked
}

fn definition_states() -> BTreeSet<String> {
    let text = std::fs::read_to_string(root().join(DEFINITION)).expect("the state machine definition");
    let definition: Value = serde_json::from_str(&text).expect("the definition is JSON");
    let mut states = BTreeSet::new();
    state_names(&definition, &mut states);
    states
}

fn page() -> String {
    std::fs::read_to_string(root().join(PAGE)).expect("docs/architecture.md")
}

#[test]
fn every_file_and_state_the_architecture_page_names_exists() {
    let states = definition_states();
    let checked = check(&page(), root(), &states, &template_names(&template()));
    assert!(checked.problems.is_empty(), "{PAGE}:\n  {}", checked.problems.join("\n  "));
    // Not vacuous: the page names the files of every hop, and the states.
    assert!(checked.paths.len() >= 25, "only {} paths found in {PAGE}: {:?}", checked.paths.len(), checked.paths);
    assert!(checked.states.len() >= 20, "only {} states found in {PAGE}: {:?}", checked.states.len(), checked.states);
    for named in ["crates/pipeline/src/fetch_step.rs", "functions/ingest/src/main.rs", DEFINITION] {
        assert!(checked.paths.contains(named), "{named} not found among the page's paths: the extraction is broken");
    }
    eprintln!(
        "{PAGE}: {} paths, {} states (of {}), {} template names checked",
        checked.paths.len(),
        checked.states.len(),
        states.len(),
        checked.template_names.len()
    );
}

#[test]
fn the_check_reports_a_file_moved_a_state_renamed_and_a_link_broken() {
    let page = page();
    let mut broken = page.clone();
    for (from, to) in [
        ("`crates/pipeline/src/fetch_step.rs`", "`crates/pipeline/src/fetch_steps.rs`"),
        ("`GroupSentBack`", "`GroupReturned`"),
        ("](../crates/redis/src/lib.rs)", "](../crates/redis/src/keys.rs)"),
    ] {
        assert!(broken.contains(from), "{PAGE} has no {from} to break");
        broken = broken.replacen(from, to, 1);
    }
    let checked = check(&broken, root(), &definition_states(), &template_names(&template()));
    let problems = checked.problems.join("\n");
    for expected in ["fetch_steps.rs", "GroupReturned", "keys.rs"] {
        assert!(problems.contains(expected), "{expected} not reported:\n{problems}");
    }
}

#[test]
fn spans_run_over_line_breaks_and_fenced_blocks_are_skipped() {
    let page = "A `crates/x.rs` and `a\nb` then `Fetch`.\n```mermaid\nflowchart TD\n  a[`crates/gone.rs`]\n```\n";
    let text = prose(page);
    let spans = code_spans(&text).expect("balanced");
    assert_eq!(spans, ["crates/x.rs", "a\nb", "Fetch"]);
    assert_eq!(code_spans("one ` unclosed"), None);
    assert_eq!(as_path("/webhooks/cafe24"), None);
    assert_eq!(as_path("{mall:m}:dirty:"), None);
    assert_eq!(as_path("README.md"), Some("README.md"));
    assert!(is_name("PlanBatch") && is_name("Pipe1") && !is_name("INIT") && !is_name("States.ALL"));
    assert_eq!(link_targets("see [x](../a/b.rs) and [y](https://e.x)"), ["../a/b.rs", "https://e.x"]);
}
