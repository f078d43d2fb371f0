//! What a first `sam deploy` of `infra/template.yaml` needs from the account
//! and the build, checked against the template (issue 36): the Lambda
//! concurrency its reservations take, as `docs/deploy.md` states it; the 429
//! alarm watching every function that calls an upstream; the drain's
//! `kms:Decrypt` for a database secret under a customer-managed key; the
//! functions' architecture as a parameter that the build and the stack
//! share; what stands in front of the HTTP API (a custom domain, the
//! default endpoint closed, a CloudFront distribution with a web ACL) off
//! unless asked for. The cache's users, the pipes' alarms and the
//! distribution's settings are policy rules (`infra/rules/cache.guard`,
//! `alarms.guard`, `api.guard`).

use sluice_tests::template::{
    block, broken_copy, function_environment, functions_and_binaries, parameter_default, resources_of_type, root,
    template,
};
use std::collections::BTreeSet;

/// What Lambda keeps unreserved in every account: reservations may take the
/// account's concurrency quota minus this.
const UNRESERVED_MINIMUM: u64 = 100;

/// Each function's reserved concurrency with the template's defaults, by
/// logical id: a number, or a `!Ref` of a parameter's default.
fn reservations(template: &str) -> Vec<(String, u64)> {
    resources_of_type(template, "AWS::Serverless::Function")
        .into_iter()
        .map(|function| {
            let lines = block(template, &format!("{function}:"));
            let value = lines
                .iter()
                .find_map(|l| l.trim().strip_prefix("ReservedConcurrentExecutions:"))
                .unwrap_or_else(|| panic!("{function} reserves no concurrency"))
                .trim()
                .to_owned();
            let number = match value.strip_prefix("!Ref ") {
                Some(parameter) => parameter_default(template, parameter)
                    .unwrap_or_else(|| panic!("{function}: {parameter} has no default")),
                None => value,
            };
            let reserved = number.parse().unwrap_or_else(|_| panic!("{function} reserves {number:?}"));
            (function, reserved)
        })
        .collect()
}

/// The reservations with the defaults add up to what docs/deploy.md says the
/// account needs (their sum, and that plus the 100 Lambda keeps unreserved),
/// so the two cannot drift apart; it names the Service Quotas quota to raise.
#[test]
fn the_deploy_doc_states_the_concurrency_the_reservations_take() {
    let template = template();
    let reserved = reservations(&template);
    assert!(reserved.len() >= 10, "{reserved:?}");
    let total: u64 = reserved.iter().map(|(_, n)| n).sum();
    let needed = total + UNRESERVED_MINIMUM;
    let doc = std::fs::read_to_string(root().join("docs/deploy.md")).expect("docs/deploy.md");
    let prerequisites = doc.split("### Prerequisites").nth(1).and_then(|rest| rest.split("\n## ").next()).unwrap_or("");
    for expected in [format!("{total} in all"), format!("at least {needed}"), "L-B99A9384".to_owned()] {
        assert!(
            prerequisites.contains(&expected),
            "docs/deploy.md's prerequisites do not say {expected:?} (reservations {reserved:?})"
        );
    }
}

/// The functions given an upstream's client id that count no `Upstream429`,
/// each with the reason.
const CALLERS_WITHOUT_429_COUNT: &[(&str, &str)] = &[(
    "EnsureTokenFunction",
    "calls only Cafe24's OAuth token endpoint, whose 429 it waits out without counting Upstream429 \
     (crates/pipeline/src/token_step.rs)",
)];

/// Where the `Upstream429s` alarm misses a function that calls an upstream
/// (one given `SLUICE_CAFE24_CLIENT_ID` or `SLUICE_GOOGLE_CLIENT_ID`, but
/// for [`CALLERS_WITHOUT_429_COUNT`]), or a metric it queries is left out
/// of its expression, one line each.
fn upstream_alarm_problems(template: &str) -> Vec<String> {
    let alarm = block(template, "Upstream429s:");
    let watched: BTreeSet<String> = alarm
        .iter()
        .filter_map(|l| l.split("{Name: Function, Value: ").nth(1))
        .filter_map(|rest| rest.split('}').next())
        .map(|f| f.trim().to_owned())
        .collect();
    let mut problems = Vec::new();
    for (function, binary) in functions_and_binaries(template) {
        let environment = function_environment(template, &function);
        let calls = environment.iter().any(|(k, _)| k == "SLUICE_CAFE24_CLIENT_ID" || k == "SLUICE_GOOGLE_CLIENT_ID");
        let exempt = CALLERS_WITHOUT_429_COUNT.iter().any(|(f, _)| *f == function);
        let name = binary.trim_start_matches("sluice-fn-");
        if calls && !exempt && !watched.contains(name) {
            problems.push(format!("{function} calls an upstream, but Upstream429s does not watch Function {name}"));
        }
    }
    let queries = alarm.iter().filter(|l| l.trim() == "MetricName: Upstream429").count();
    let expression = alarm.iter().find_map(|l| l.trim().strip_prefix("Expression:")).unwrap_or_default();
    if queries != expression.matches("FILL(").count() || queries != watched.len() {
        problems.push(format!("Upstream429s queries {queries} metrics ({watched:?}) but sums {expression}"));
    }
    problems
}

#[test]
fn the_429_alarm_watches_every_function_that_calls_an_upstream() {
    let problems = upstream_alarm_problems(&template());
    assert!(problems.is_empty(), "{problems:#?}");
    // The alarm as it was: fetch and flush-sheet, not catch-up.
    let problems =
        upstream_alarm_problems(&broken_copy("{Name: Function, Value: catch-up}", "{Name: Function, Value: fetch}"));
    assert!(problems.iter().any(|p| p.starts_with("MallDrainFunction calls an upstream")), "{problems:#?}");
}

/// With `DatabaseSecretKmsKeyArn` set, the drain (and only the drain) may
/// `kms:Decrypt` with that key, only through Secrets Manager in the stack's
/// region and only for the database secret; unset, it gets no KMS grant.
#[test]
fn the_drain_may_decrypt_its_secret_with_a_customer_managed_key() {
    let template = template();
    assert_eq!(parameter_default(&template, "DatabaseSecretKmsKeyArn").as_deref(), Some(""));
    let conditions = block(&template, "Conditions:").join("\n");
    assert!(
        conditions.contains("HasDatabaseSecretKmsKey: !Not [!Equals [!Ref DatabaseSecretKmsKeyArn, \"\"]]"),
        "{conditions}"
    );
    let drain = block(&template, "DrainFunction:").join("\n");
    for expected in [
        "- !If\n          - HasDatabaseSecretKmsKey\n          - Statement:",
        "Action: kms:Decrypt",
        "Resource: !Ref DatabaseSecretKmsKeyArn",
        "kms:ViaService: !Sub \"secretsmanager.${AWS::Region}.amazonaws.com\"",
        "kms:EncryptionContext:SecretARN: !Ref DatabaseUrlSecretArn",
        "- !Ref AWS::NoValue",
    ] {
        assert!(drain.contains(expected), "DrainFunction lacks {expected:?}:\n{drain}");
    }
    for function in resources_of_type(&template, "AWS::Serverless::Function") {
        let lines = block(&template, &format!("{function}:")).join("\n");
        assert_eq!(lines.contains("kms:"), function == "DrainFunction", "{function}: a KMS grant");
    }
}

/// The functions' architecture is one parameter (arm64 by default, x86_64
/// where arm64 cannot be built) in `Globals`, overridden by no function;
/// `make package` builds for x86_64 with that override when the aarch64
/// target is missing, so the binaries and the stack can agree.
#[test]
fn the_architecture_is_one_parameter_of_the_build_and_the_stack() {
    let template = template();
    assert_eq!(parameter_default(&template, "Architecture").as_deref(), Some("arm64"));
    let parameter = block(&template, "Architecture:").join("\n");
    assert!(parameter.contains("AllowedValues: [arm64, x86_64]"), "{parameter}");
    let globals = block(&template, "Globals:").join("\n");
    assert!(globals.contains("Architectures: [!Ref Architecture]"), "{globals}");
    assert_eq!(template.matches("Architectures:").count(), 1, "a function sets its own Architectures");
    let script = std::fs::read_to_string(root().join("scripts/sam-build.sh")).expect("scripts/sam-build.sh");
    assert!(script.contains("Architecture=x86_64"), "scripts/sam-build.sh builds x86_64 with no override");
    assert!(script.contains("CARGO_TARGET_DIR"), "scripts/sam-build.sh leaves CARGO_TARGET_DIR to sam build");
}

/// The parameters that put something in front of the HTTP API
/// (docs/security.md, "In front of the HTTP API"), each with the default
/// that leaves it off.
const FRONT_DOOR_PARAMETERS: &[(&str, &str)] = &[
    ("ApiDomainName", ""),
    ("ApiCertificateArn", ""),
    ("DisableExecuteApiEndpoint", "false"),
    ("FrontWebAclArn", ""),
    ("FrontDomainName", ""),
    ("FrontCertificateArn", ""),
];

/// The resources in front of the HTTP API, each with the condition it
/// exists under (false with the defaults above).
const FRONT_DOOR_RESOURCES: &[(&str, &str)] = &[
    ("AWS::ApiGatewayV2::DomainName", "HasApiDomain"),
    ("AWS::ApiGatewayV2::ApiMapping", "HasApiDomain"),
    ("AWS::CloudFront::Distribution", "HasFront"),
];

/// The conditions those resources and the default endpoint depend on: a
/// domain, a distribution, and the endpoint closed only with the domain.
const FRONT_DOOR_CONDITIONS: &[&str] = &[
    r#"HasApiDomain: !Not [!Equals [!Ref ApiDomainName, ""]]"#,
    r#"CloseExecuteApi: !And [!Equals [!Ref DisableExecuteApiEndpoint, "true"], !Condition HasApiDomain]"#,
    r#"HasFront: !Not [!Equals [!Ref FrontWebAclArn, ""]]"#,
];

/// The `Outputs` entries, by name, with their lines.
fn outputs(template: &str) -> Vec<(String, Vec<&str>)> {
    let lines = block(template, "Outputs:");
    let mut entries: Vec<(String, Vec<&str>)> = Vec::new();
    for line in lines {
        let depth = line.len() - line.trim_start().len();
        if depth == 2 && line.trim_end().ends_with(':') {
            entries.push((line.trim().trim_end_matches(':').to_owned(), Vec::new()));
        } else if let Some((_, body)) = entries.last_mut() {
            body.push(line);
        }
    }
    entries
}

/// Whether `text` names the resource `id` (`id.Attribute`, `${id}`,
/// `!Ref id`), and not only a longer name starting with it.
fn names_resource(text: &str, id: &str) -> bool {
    text.match_indices(id).any(|(at, _)| {
        let before = text[..at].chars().next_back().is_some_and(|c| c.is_ascii_alphanumeric());
        let after = text[at + id.len()..].chars().next();
        !before && matches!(after, Some('.' | '}' | '\n' | ' ' | ',' | ']') | None)
    })
}

/// Where the default template would put something in front of the HTTP API
/// or close its default endpoint, or lets a parameter close it with no
/// custom domain, one line each. `docs/deploy.md` names every parameter.
fn front_door_problems(template: &str) -> Vec<String> {
    let mut problems = Vec::new();
    for (name, off) in FRONT_DOOR_PARAMETERS {
        let default = parameter_default(template, name);
        if default.as_deref() != Some(off) {
            problems.push(format!("{name} defaults to {default:?}, not {off:?}"));
        }
    }
    let conditions = block(template, "Conditions:").join("\n");
    for expected in FRONT_DOOR_CONDITIONS {
        if !conditions.contains(expected) {
            problems.push(format!("Conditions lack {expected}"));
        }
    }
    let mut conditional = Vec::new();
    for (type_, condition) in FRONT_DOOR_RESOURCES {
        let resources = resources_of_type(template, type_);
        if resources.is_empty() {
            problems.push(format!("no {type_}"));
        }
        for resource in resources {
            let lines = block(template, &format!("{resource}:"));
            if !lines.iter().any(|l| l.trim() == format!("Condition: {condition}")) {
                problems
                    .push(format!("{resource} ({type_}) has no Condition {condition}: the default deploy creates it"));
            }
            conditional.push((resource, *condition));
        }
    }
    // Closed only under CloseExecuteApi, as a boolean (SAM writes it into
    // the OpenAPI body), and the parameter refused without a domain.
    let api = block(template, "HttpApi:").join("\n");
    if !api.contains("DisableExecuteApiEndpoint: !If [CloseExecuteApi, true, false]") {
        problems.push("HttpApi's DisableExecuteApiEndpoint is not !If [CloseExecuteApi, true, false]".to_owned());
    }
    let rules = block(template, "Rules:").join("\n");
    let refusal = r#"RuleCondition: !Equals [!Ref DisableExecuteApiEndpoint, "true"]
    Assertions:
      - Assert: !Not [!Equals [!Ref ApiDomainName, ""]]"#;
    if !rules.contains(refusal) {
        problems.push("no rule in Rules refuses DisableExecuteApiEndpoint true without ApiDomainName".to_owned());
    }
    // An output naming a conditional resource exists under its condition.
    for (output, lines) in outputs(template) {
        let text = lines.join("\n");
        for (resource, condition) in &conditional {
            let names = names_resource(&text, resource);
            if names && !lines.iter().any(|l| l.trim() == format!("Condition: {condition}")) {
                problems.push(format!("output {output} names {resource} without Condition {condition}"));
            }
        }
    }
    let doc = std::fs::read_to_string(root().join("docs/deploy.md")).expect("docs/deploy.md");
    let table = doc.split("## Parameters").nth(1).and_then(|rest| rest.split("\n## ").next()).unwrap_or("");
    for (name, _) in FRONT_DOOR_PARAMETERS {
        if !table.contains(&format!("`{name}`")) {
            problems.push(format!("docs/deploy.md's Parameters do not name {name}"));
        }
    }
    problems
}

/// The default deploy is the HTTP API alone on its execute-api endpoint: no
/// custom domain, no distribution, the endpoint open; the endpoint closes
/// only with a custom domain, and the stack refuses the parameter without
/// one (the distribution's web ACL, HTTPS and TLS are `api.guard`'s).
#[test]
fn nothing_stands_in_front_of_the_api_unless_asked_for() {
    let problems = front_door_problems(&template());
    assert!(problems.is_empty(), "{problems:#?}");
    // The distribution made on every deploy.
    let problems = front_door_problems(&broken_copy("    Condition: HasFront\n", ""));
    assert!(
        problems.iter().any(|p| p.starts_with("FrontDistribution (AWS::CloudFront::Distribution) has no Condition")),
        "{problems:#?}"
    );
    // The endpoint closed by the parameter alone, domain or not.
    let problems = front_door_problems(&broken_copy(
        FRONT_DOOR_CONDITIONS[1],
        r#"CloseExecuteApi: !Equals [!Ref DisableExecuteApiEndpoint, "true"]"#,
    ));
    assert!(problems.iter().any(|p| p.starts_with("Conditions lack CloseExecuteApi")), "{problems:#?}");
    // A custom domain on by default.
    let problems = front_door_problems(&broken_copy(
        "  ApiDomainName:\n    Type: String\n    Default: \"\"",
        "  ApiDomainName:\n    Type: String\n    Default: hooks-origin.example.com",
    ));
    assert!(problems.iter().any(|p| p.starts_with("ApiDomainName defaults to")), "{problems:#?}");
}
