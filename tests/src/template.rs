//! Reading `infra/template.yaml` as text. CloudFormation's `!Ref`/`!GetAtt`
//! tags are not plain YAML and the workspace has no YAML parser; what the
//! checks read has a fixed shape: blocks by indentation, `Key: value`
//! lines, and flow mappings (`{Name: Stage, Value: !Ref Stage}`).

use std::collections::BTreeSet;
use std::path::Path;

/// The repository's root.
pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ has a parent")
}

/// `infra/template.yaml`'s text.
pub fn template() -> String {
    std::fs::read_to_string(root().join("infra/template.yaml")).expect("infra/template.yaml")
}

/// The template with its first `from` replaced by `to`: a copy broken on
/// purpose, to show a check reports the break. Panics when the template
/// has no `from` (the test would prove nothing).
pub fn broken_copy(from: &str, to: &str) -> String {
    let original = template();
    assert!(original.contains(from), "infra/template.yaml has no {from:?} to break");
    original.replacen(from, to, 1)
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// The lines of the YAML block that starts with the line `header`
/// (trimmed), up to the next line indented no deeper than it; empty when
/// there is no such block.
pub fn block<'t>(template: &'t str, header: &str) -> Vec<&'t str> {
    let mut lines = template.lines().skip_while(|l| l.trim() != header);
    let Some(first) = lines.next() else { return Vec::new() };
    let depth = indent(first);
    lines.take_while(|l| l.trim().is_empty() || indent(l) > depth).collect()
}

/// The whole-number value of `key:` in a block, if set.
pub fn number(lines: &[&str], key: &str) -> Option<u64> {
    lines.iter().find_map(|l| l.trim().strip_prefix(key)?.strip_prefix(':')?.trim().parse().ok())
}

/// The top-level resources of `type_`, by logical id (`Name:` at two
/// spaces, its `Type:` on the next line).
pub fn resources_of_type(template: &str, type_: &str) -> BTreeSet<String> {
    let lines: Vec<&str> = template.lines().collect();
    lines
        .windows(2)
        .filter(|pair| pair[1].trim() == format!("Type: {type_}") && indent(pair[0]) == 2)
        .map(|pair| pair[0].trim().trim_end_matches(':').to_owned())
        .collect()
}

/// `KEY: value` pairs of the `Variables:` block inside `lines`.
pub fn variables(lines: &[&str]) -> Vec<(String, String)> {
    let Some(start) = lines.iter().position(|l| l.trim() == "Variables:") else { return Vec::new() };
    let depth = indent(lines[start]);
    lines[start + 1..]
        .iter()
        .take_while(|l| l.trim().is_empty() || indent(l) > depth)
        .filter(|l| !l.trim().starts_with('#'))
        .filter_map(|l| l.trim().split_once(':').map(|(k, v)| (k.to_owned(), v.trim().to_owned())))
        .collect()
}

/// The variables `function` gets: the `Globals`, then its own, a variable
/// it sets itself taking the place of the `Globals`' (as SAM merges them:
/// ingest's own cache user, for one).
pub fn function_environment(template: &str, function: &str) -> Vec<(String, String)> {
    let mut all = variables(&block(template, "Globals:"));
    for (name, value) in variables(&block(template, &format!("{function}:"))) {
        all.retain(|(k, _)| *k != name);
        all.push((name, value));
    }
    all
}

/// The logical id a `!Ref X` or `!GetAtt X.Attribute` names.
pub fn referenced(value: &str) -> Option<&str> {
    let value = value.trim();
    if let Some(id) = value.strip_prefix("!Ref ") {
        return Some(id.trim());
    }
    value.strip_prefix("!GetAtt ").and_then(|v| v.trim().split('.').next())
}

/// The secrets a function may read: `AWSSecretsManagerGetSecretValuePolicy: {SecretArn: !Ref X}`.
pub fn readable_secrets(lines: &[&str]) -> BTreeSet<String> {
    lines
        .iter()
        .filter_map(|l| l.split_once("AWSSecretsManagerGetSecretValuePolicy: {SecretArn: !Ref ")?.1.split_once('}'))
        .map(|(secret, _)| secret.trim().to_owned())
        .collect()
}

/// The keys of the block under `DefinitionSubstitutions:`.
pub fn substitutions(template: &str) -> BTreeSet<String> {
    block(template, "DefinitionSubstitutions:")
        .iter()
        .filter_map(|l| l.trim().split_once(':').map(|(k, _)| k.to_owned()))
        .collect()
}

/// `${Name}` placeholders of one text.
pub fn placeholders(text: &str) -> BTreeSet<String> {
    text.split("${").skip(1).filter_map(|rest| rest.split_once('}').map(|(name, _)| name.to_owned())).collect()
}

/// The binaries the template builds (`BuildProperties: Binary: …`).
pub fn built_binaries(template: &str) -> BTreeSet<String> {
    template.lines().filter_map(|l| l.trim().strip_prefix("Binary:").map(|b| b.trim().to_owned())).collect()
}

/// Each function the template deploys, with the binary it builds.
pub fn functions_and_binaries(template: &str) -> Vec<(String, String)> {
    resources_of_type(template, "AWS::Serverless::Function")
        .into_iter()
        .filter_map(|f| {
            let binary = block(template, &format!("{f}:"))
                .iter()
                .find_map(|l| l.trim().strip_prefix("Binary:").map(|b| b.trim().to_owned()))?;
            Some((f, binary))
        })
        .collect()
}

/// The package names of the crates in `functions/`.
pub fn function_crates() -> BTreeSet<String> {
    std::fs::read_dir(root().join("functions"))
        .expect("functions/")
        .filter_map(|entry| std::fs::read_to_string(entry.ok()?.path().join("Cargo.toml")).ok())
        .filter_map(|manifest| {
            manifest.lines().find_map(|l| l.strip_prefix("name = ").map(|n| n.trim_matches('"').to_owned()))
        })
        .collect()
}

/// The top-level keys of the template's `Parameters:` section.
pub fn parameters(template: &str) -> BTreeSet<String> {
    block(template, "Parameters:")
        .iter()
        .filter(|l| indent(l) == 2 && l.trim_end().ends_with(':'))
        .map(|l| l.trim().trim_end_matches(':').to_owned())
        .collect()
}

/// The `Default:` of parameter `name`, quotes removed; `None` when the
/// template has no such parameter or it has no default.
pub fn parameter_default(template: &str, name: &str) -> Option<String> {
    let parameters = block(template, "Parameters:").join("\n");
    block(&parameters, &format!("{name}:"))
        .iter()
        .find_map(|l| l.trim().strip_prefix("Default:"))
        .map(|v| v.trim().trim_matches('"').to_owned())
}

/// The dashboard's body: the text of the `DashboardBody: !Sub` block
/// scalar, its `${…}` left as they are.
pub fn dashboard_body(template: &str) -> Option<String> {
    let start = template.find("DashboardBody: !Sub")?;
    // The `!Sub` line, then `- |`, then the body.
    let lines: Vec<&str> = template[start..].lines().skip(2).collect();
    let depth = indent(lines.first()?);
    let body: Vec<&str> = lines.iter().take_while(|l| indent(l) >= depth).map(|l| &l[depth..]).collect();
    Some(body.join("\n"))
}

/// The `{…}` entries of a flow sequence (`[{Name: A, Value: x}, {…}]`) as
/// their `key: value` pairs; braces and commas inside quotes are text.
pub fn flow_mappings(sequence: &str) -> Vec<Vec<(String, String)>> {
    let mut entries = Vec::new();
    let (mut depth, mut quoted, mut start) = (0usize, false, 0usize);
    for (i, c) in sequence.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '{' if !quoted => {
                if depth == 0 {
                    start = i + 1;
                }
                depth += 1;
            }
            '}' if !quoted && depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    entries.push(flow_pairs(&sequence[start..i]));
                }
            }
            _ => {}
        }
    }
    entries
}

/// `a: x, b: "y, z"` as pairs.
fn flow_pairs(text: &str) -> Vec<(String, String)> {
    let mut parts = Vec::new();
    let (mut quoted, mut start) = (false, 0);
    for (i, c) in text.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts.iter().filter_map(|p| p.split_once(':').map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "  F:\n    Type: X\n    Properties:\n      Timeout: 9\n      Environment:\n        Variables:\n          A: !Ref B\n          # c\n          C: \"d\"\n      Policies:\n        - AWSSecretsManagerGetSecretValuePolicy: {SecretArn: !Ref S}\n  G:\n    Type: X\n    Timeout: 1\n";

    #[test]
    fn blocks_stop_at_the_next_sibling() {
        let f = block(SAMPLE, "F:");
        assert_eq!(number(&f, "Timeout"), Some(9));
        assert_eq!(number(&f, "VisibilityTimeout"), None);
        assert_eq!(number(&block(SAMPLE, "G:"), "Timeout"), Some(1));
        assert!(block(SAMPLE, "H:").is_empty());
    }

    #[test]
    fn a_functions_own_variable_takes_the_place_of_the_globals() {
        let template = "Globals:\n  Function:\n    Environment:\n      Variables:\n        A: g\n        B: g\n\
                        Resources:\n  F:\n    Properties:\n      Environment:\n        Variables:\n          B: f\n";
        let environment = function_environment(template, "F");
        assert_eq!(environment, vec![("A".into(), "g".into()), ("B".into(), "f".into())]);
    }

    #[test]
    fn environments_secrets_and_resources_are_read() {
        let f = block(SAMPLE, "F:");
        assert_eq!(variables(&f), vec![("A".into(), "!Ref B".into()), ("C".into(), "\"d\"".into())]);
        assert_eq!(readable_secrets(&f), BTreeSet::from(["S".to_owned()]));
        assert_eq!(resources_of_type(SAMPLE, "X"), BTreeSet::from(["F".to_owned(), "G".to_owned()]));
        let parameters = "Parameters:\n  A:\n    Type: String\n    Default: \"\"\n  B:\n    Type: Number\n    Default: 5\n  C:\n    Type: String\nResources:\n";
        assert_eq!(
            (
                parameter_default(parameters, "A"),
                parameter_default(parameters, "B"),
                parameter_default(parameters, "C")
            ),
            (Some(String::new()), Some("5".to_owned()), None)
        );
        assert_eq!(
            (referenced("!Ref Q"), referenced("!GetAtt Q.QueueName"), referenced("x")),
            (Some("Q"), Some("Q"), None)
        );
    }

    #[test]
    fn substitutions_and_placeholders_are_read() {
        let sample = "    DefinitionSubstitutions:\n      A: !GetAtt A.Arn\n      B: x\n    Logging:\n";
        assert_eq!(substitutions(sample), BTreeSet::from(["A".to_owned(), "B".to_owned()]));
        assert_eq!(placeholders(r#"{"F": "${A}", "G": "${B}x"}"#), BTreeSet::from(["A".to_owned(), "B".to_owned()]));
    }

    #[test]
    fn flow_mappings_keep_quoted_braces_and_commas() {
        let entries = flow_mappings(r#"[{Name: A, Value: !Ref S}, {Name: B, Value: !Sub "x-${S}, y"}]"#);
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0], vec![("Name".into(), "A".into()), ("Value".into(), "!Ref S".into())]);
        assert_eq!(entries[1][1], ("Value".into(), r#"!Sub "x-${S}, y""#.into()));
    }
}
