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

/// The lines of the YAML block that starts with the line `header` (trimmed),
/// up to the next line indented no deeper than it.
fn block<'t>(template: &'t str, header: &str) -> Vec<&'t str> {
    let mut lines = template.lines().skip_while(|l| l.trim() != header);
    let first = lines.next().unwrap_or_else(|| panic!("no {header} block in infra/template.yaml"));
    let indent = first.len() - first.trim_start().len();
    lines.take_while(|l| l.trim().is_empty() || l.len() - l.trim_start().len() > indent).collect()
}

/// The whole-number value of `key:` in a block, if set.
fn number(lines: &[&str], key: &str) -> Option<u64> {
    lines.iter().find_map(|l| l.trim().strip_prefix(key)?.strip_prefix(':')?.trim().parse().ok())
}

/// Longest Express execution Step Functions allows, seconds.
const EXPRESS_MAX_S: u64 = 300;
/// What Pipes adds between receiving a batch and starting the execution
/// (polling, the StartSyncExecution call), beyond any batching window: a
/// margin, not a measured number.
const PIPE_OVERHEAD_S: u64 = 30;

/// A batch must never become visible again while an execution may still
/// work on it: the event queue's visibility timeout exceeds the longest a
/// pipe can hold a batch (its batching window, the execution's timeout,
/// the pipe's overhead); the execution's timeout is one Express allows and
/// bounds every Lambda it calls; the flush queue's visibility is six times
/// its function's timeout, as AWS advises. docs/deploy.md ("How long a
/// message waits after its consumer dies") states the same numbers.
#[test]
fn visibility_timeouts_outlast_what_holds_a_batch() {
    let template = template();
    let definition = std::fs::read_to_string(root().join("statemachine/pipeline.asl.json")).expect("definition");
    let definition: serde_json::Value = serde_json::from_str(&definition).expect("definition JSON");
    let execution = definition["TimeoutSeconds"].as_u64().expect("the pipeline sets TimeoutSeconds");
    assert!(execution <= EXPRESS_MAX_S, "TimeoutSeconds {execution} is above Express's {EXPRESS_MAX_S} s");
    let machine = block(&template, "Pipeline:");
    assert!(machine.iter().any(|l| l.trim() == "Type: EXPRESS"), "the pipeline is an Express state machine");

    let pipe = block(&template, "Pipe1:");
    assert!(pipe.iter().any(|l| l.contains("InvocationType: REQUEST_RESPONSE")), "the pipe waits for the execution");
    let window = number(&pipe, "MaximumBatchingWindowInSeconds").unwrap_or(0);
    let held = window + execution + PIPE_OVERHEAD_S;
    let events = number(&block(&template, "EventsQueue:"), "VisibilityTimeout").expect("EventsQueue VisibilityTimeout");
    assert!(
        events >= held,
        "events visibility {events} s < batching window {window} + execution {execution} + {PIPE_OVERHEAD_S} s"
    );

    let global = number(&block(&template, "Globals:"), "Timeout").expect("a global function Timeout");
    let called: Vec<String> = substitutions(&template).into_iter().collect();
    for function in &called {
        let timeout = number(&block(&template, &format!("{function}:")), "Timeout").unwrap_or(global);
        assert!(timeout < execution, "{function} may run {timeout} s, not less than the execution's {execution} s");
    }

    let flush_fn = block(&template, "FlushSheetFunction:");
    let flush_timeout = number(&flush_fn, "Timeout").unwrap_or(global);
    let flush_window = number(&flush_fn, "MaximumBatchingWindowInSeconds").unwrap_or(0);
    let flush = number(&block(&template, "FlushQueue:"), "VisibilityTimeout").expect("FlushQueue VisibilityTimeout");
    assert!(
        flush >= 6 * flush_timeout + flush_window,
        "flush visibility {flush} s < 6 x the flush function's {flush_timeout} s + window {flush_window} s"
    );
}

#[test]
fn the_block_reader_stops_at_the_next_sibling() {
    let sample = "  A:\n    Type: X\n    Properties:\n      Timeout: 9\n  B:\n    Timeout: 1\n";
    let a = block(sample, "A:");
    assert_eq!(number(&a, "Timeout"), Some(9));
    assert_eq!(number(&a, "VisibilityTimeout"), None);
    assert_eq!(number(&block(sample, "B:"), "Timeout"), Some(1));
}

/// The top-level resources of `type_`, by logical id (`Name:` at two spaces, its `Type:` next).
fn resources_of_type(template: &str, type_: &str) -> BTreeSet<String> {
    let lines: Vec<&str> = template.lines().collect();
    lines
        .windows(2)
        .filter(|pair| {
            pair[1].trim() == format!("Type: {type_}") && pair[0].starts_with("  ") && !pair[0].starts_with("   ")
        })
        .map(|pair| pair[0].trim().trim_end_matches(':').to_owned())
        .collect()
}

/// `KEY: value` pairs of the `Variables:` block inside `lines`.
fn variables(lines: &[&str]) -> Vec<(String, String)> {
    let Some(start) = lines.iter().position(|l| l.trim() == "Variables:") else { return Vec::new() };
    let indent = lines[start].len() - lines[start].trim_start().len();
    lines[start + 1..]
        .iter()
        .take_while(|l| l.trim().is_empty() || l.len() - l.trim_start().len() > indent)
        .filter(|l| !l.trim().starts_with('#'))
        .filter_map(|l| l.trim().split_once(':').map(|(k, v)| (k.to_owned(), v.trim().to_owned())))
        .collect()
}

/// The secrets a function may read: `AWSSecretsManagerGetSecretValuePolicy: {SecretArn: !Ref X}`.
fn readable_secrets(lines: &[&str]) -> BTreeSet<String> {
    lines
        .iter()
        .filter_map(|l| l.split_once("AWSSecretsManagerGetSecretValuePolicy: {SecretArn: !Ref ")?.1.split_once('}'))
        .map(|(secret, _)| secret.trim().to_owned())
        .collect()
}

/// What each function reads from its environment beyond the `Globals` (which every function reads):
/// the contract between the template and the functions' code. A secret is only ever an ARN there.
const FUNCTION_VARIABLES: &[(&str, &[&str])] = &[
    ("IngestFunction", &["SLUICE_QUEUE_URL", "SLUICE_API_KEYS_SECRET_ARN"]),
    ("PlanBatchFunction", &["SLUICE_MAP_MAX_CONCURRENCY"]),
    (
        "EnsureTokenFunction",
        &[
            "SLUICE_CAFE24_CLIENT_ID",
            "SLUICE_CAFE24_CLIENT_SECRET_ARN",
            "SLUICE_BUCKET_CAPACITY",
            "SLUICE_BUCKET_DRAIN_PER_SEC",
        ],
    ),
    (
        "FetchFunction",
        &[
            "SLUICE_CAFE24_CLIENT_ID",
            "SLUICE_CAFE24_CLIENT_SECRET_ARN",
            "SLUICE_BUCKET_CAPACITY",
            "SLUICE_BUCKET_DRAIN_PER_SEC",
        ],
    ),
    ("StoreFunction", &["SLUICE_BUCKET_CAPACITY", "SLUICE_BUCKET_DRAIN_PER_SEC"]),
    ("RecordFailureFunction", &["SLUICE_MAX_RECEIVE_COUNT"]),
    (
        "BufferRowFunction",
        &[
            "SLUICE_FLUSH_QUEUE_URL",
            "SLUICE_GOOGLE_PROJECT",
            "SLUICE_SHEETS_WRITES_PER_MINUTE",
            "SLUICE_SHEETS_PROJECT_WRITES_PER_MINUTE",
        ],
    ),
    (
        "FlushSheetFunction",
        &[
            "SLUICE_FLUSH_QUEUE_URL",
            "SLUICE_GOOGLE_CLIENT_ID",
            "SLUICE_GOOGLE_CLIENT_SECRET_ARN",
            "SLUICE_GOOGLE_PROJECT",
            "SLUICE_SHEETS_WRITES_PER_MINUTE",
            "SLUICE_SHEETS_PROJECT_WRITES_PER_MINUTE",
            "SLUICE_ALERT_URL_SECRET_ARN",
        ],
    ),
];

/// What every function reads, from `Globals`.
const GLOBAL_VARIABLES: &[&str] = &[
    "SLUICE_REDIS_URL",
    "SLUICE_REDIS_PASSWORD_SECRET_ARN",
    "SLUICE_SECRET_TTL_SECS",
    "SLUICE_KEY_PREFIX",
    "SLUICE_STAGE",
];

/// Each function's environment holds what it uses, and nothing it does not: the table above is the
/// whole of it, for every function the template deploys.
#[test]
fn each_function_gets_the_variables_it_uses() {
    let template = template();
    let globals: BTreeSet<String> = variables(&block(&template, "Globals:")).into_iter().map(|(k, _)| k).collect();
    assert_eq!(globals, GLOBAL_VARIABLES.iter().map(|v| v.to_string()).collect(), "Globals' variables");
    let functions = resources_of_type(&template, "AWS::Serverless::Function");
    let listed: BTreeSet<String> = FUNCTION_VARIABLES.iter().map(|(f, _)| f.to_string()).collect();
    assert_eq!(functions, listed, "every function has a row in FUNCTION_VARIABLES");
    for (function, expected) in FUNCTION_VARIABLES {
        let own: BTreeSet<String> =
            variables(&block(&template, &format!("{function}:"))).into_iter().map(|(k, _)| k).collect();
        assert_eq!(own, expected.iter().map(|v| v.to_string()).collect(), "{function}'s variables");
    }
}

/// No secret's value reaches an environment: no `{{resolve:secretsmanager:…}}` (resolved once, at deploy
/// time, and shown in the function's configuration), no password in the Redis URL, and each
/// `…_SECRET_ARN` is a `!Ref` of a secret the template creates, which that function's IAM policy (and
/// no other secret) lets it read.
#[test]
fn secrets_reach_functions_as_arns_only() {
    let template = template();
    let secrets = resources_of_type(&template, "AWS::SecretsManager::Secret");
    assert!(secrets.contains("CachePassword") && secrets.len() >= 5, "{secrets:?}");
    let globals = variables(&block(&template, "Globals:"));
    for (function, _) in FUNCTION_VARIABLES {
        let lines = block(&template, &format!("{function}:"));
        let mut needed = BTreeSet::new();
        for (name, value) in globals.iter().chain(variables(&lines).iter()) {
            assert!(
                !value.contains("resolve:secretsmanager"),
                "{function}: {name} resolves a secret into the environment"
            );
            if name.ends_with("_SECRET_ARN") {
                let secret = value.strip_prefix("!Ref ").unwrap_or_else(|| panic!("{function}: {name} is not a !Ref"));
                assert!(secrets.contains(secret), "{function}: {name} names {secret}, not a secret of the template");
                needed.insert(secret.to_owned());
            }
        }
        assert_eq!(readable_secrets(&lines), needed, "{function} may read exactly the secrets it names");
    }
    let redis_url = &globals.iter().find(|(k, _)| k == "SLUICE_REDIS_URL").expect("SLUICE_REDIS_URL").1;
    assert!(redis_url.contains("rediss://sluice@"), "TLS, the ACL user, no password: {redis_url}");
}

/// Alarms cannot use SEARCH, so every function has its own alarm on its fixed `FunctionName`, on both
/// its errors and its throttles.
#[test]
fn every_function_has_an_errors_alarm() {
    let template = template();
    let alarms = resources_of_type(&template, "AWS::CloudWatch::Alarm");
    for function in resources_of_type(&template, "AWS::Serverless::Function") {
        let watched = format!("Value: !Ref {function}");
        let alarm = alarms.iter().map(|a| block(&template, &format!("{a}:"))).find(|lines| {
            ["MetricName: Errors", "MetricName: Throttles"]
                .iter()
                .all(|metric| lines.iter().any(|l| l.contains(metric) && l.contains(&watched)))
        });
        assert!(alarm.is_some(), "no alarm watches {function}'s Errors and Throttles");
    }
}

/// The pipes are written out (SAM CLI cannot build a template with `Fn::ForEach`), so each copy must
/// stay the same as the first but for its number, and `PipeCount` must reach every one of them.
#[test]
fn the_pipes_differ_only_in_their_number() {
    let template = template();
    let pipes = resources_of_type(&template, "AWS::Pipes::Pipe");
    assert!(pipes.len() >= 2, "{pipes:?}");
    let shape = |n: usize| -> Vec<String> {
        block(&template, &format!("Pipe{n}:"))
            .iter()
            .filter(|l| !l.trim().is_empty() && !l.trim().starts_with("Condition:"))
            .map(|l| l.replace(&format!("pipe-{n}"), "pipe-N"))
            .collect()
    };
    for n in 1..=pipes.len() {
        assert!(pipes.contains(&format!("Pipe{n}")), "pipes are numbered 1..{}: {pipes:?}", pipes.len());
        assert_eq!(shape(n), shape(1), "Pipe{n} differs from Pipe1");
        let condition =
            block(&template, &format!("Pipe{n}:")).iter().any(|l| l.trim() == format!("Condition: HasPipe{n}"));
        assert_eq!(condition, n > 1, "Pipe{n} exists only when PipeCount reaches it");
    }
    let counts = block(&template, "PipeCount:");
    let allowed =
        counts.iter().find_map(|l| l.trim().strip_prefix("AllowedValues: ")).expect("PipeCount's AllowedValues");
    assert_eq!(allowed.matches(',').count() + 1, pipes.len(), "PipeCount allows 1..{}", pipes.len());
}

#[test]
fn the_environment_readers_see_what_they_should() {
    let sample = "  F:\n    Type: X\n    Properties:\n      Environment:\n        Variables:\n          A: !Ref B\n          # c\n          C: \"d\"\n      Policies:\n        - AWSSecretsManagerGetSecretValuePolicy: {SecretArn: !Ref S}\n  G:\n    Type: X\n";
    let f = block(sample, "F:");
    assert_eq!(variables(&f), vec![("A".into(), "!Ref B".into()), ("C".into(), "\"d\"".into())]);
    assert_eq!(readable_secrets(&f), BTreeSet::from(["S".to_owned()]));
    assert_eq!(resources_of_type(sample, "X"), BTreeSet::from(["F".to_owned(), "G".to_owned()]));
}

/// The top-level keys of the template's `Parameters:` section.
fn parameters(template: &str) -> BTreeSet<String> {
    block(template, "Parameters:")
        .iter()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   ") && l.trim_end().ends_with(':'))
        .map(|l| l.trim().trim_end_matches(':').to_owned())
        .collect()
}

/// docs/deploy.md is what a user deploys from: it names every parameter the template takes, and every
/// alarm's description points at a section of it that says what to do.
#[test]
fn the_deploy_doc_covers_every_parameter_and_alarm() {
    let template = template();
    let doc = std::fs::read_to_string(root().join("docs/deploy.md")).expect("docs/deploy.md");
    let params = parameters(&template);
    assert!(params.len() >= 20, "{params:?}");
    let missing: Vec<_> = params.iter().filter(|p| !doc.contains(&format!("`{p}`"))).collect();
    assert!(missing.is_empty(), "parameters docs/deploy.md does not name: {missing:?}");

    let headings: BTreeSet<&str> = doc.lines().filter_map(|l| l.strip_prefix("### ")).map(str::trim).collect();
    for alarm in resources_of_type(&template, "AWS::CloudWatch::Alarm") {
        let lines = block(&template, &format!("{alarm}:"));
        let text = lines.join(" ");
        let anchor = text
            .split("docs/deploy.md#")
            .nth(1)
            .and_then(|rest| rest.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')).next())
            .unwrap_or_else(|| panic!("{alarm}'s description points at no docs/deploy.md section"));
        assert!(headings.contains(anchor), "{alarm} points at docs/deploy.md#{anchor}, which has no ### {anchor}");
    }
}

/// Every `SLUICE_*` variable the template sets is one the functions' configuration reads
/// (`sluice_config`'s tables), so a renamed or dropped setting fails here, not at a cold start.
#[test]
fn every_variable_the_template_sets_is_one_the_code_reads() {
    let template = template();
    let known = sluice_config::all_tables();
    let mut unknown = BTreeSet::new();
    for line in template.lines() {
        let Some(name) = line.trim().split(':').next().filter(|n| n.starts_with("SLUICE_")) else { continue };
        if !known.contains(&format!("`{name}`")) {
            unknown.insert(name.to_owned());
        }
    }
    assert!(unknown.is_empty(), "the template sets variables no configuration reads: {unknown:?}");
}

/// Every pipe hands an execution at most the batch that ingest's message cap was computed
/// for (`sluice_domain::queue::PIPE_BATCH_SIZE`): a larger batch of the largest rows would
/// exceed Step Functions' input limit and fail every message in it.
#[test]
fn pipe_batches_are_no_larger_than_the_message_cap_allows() {
    let template = template();
    let sizes: Vec<usize> = template
        .lines()
        .filter(|l| l.contains("SqsQueueParameters"))
        .filter_map(|l| l.split("BatchSize:").nth(1))
        .map(|rest| rest.trim_matches(|c: char| !c.is_ascii_digit()).parse().unwrap())
        .collect();
    assert!(!sizes.is_empty(), "no pipe found");
    for size in sizes {
        assert!(size <= sluice_domain::queue::PIPE_BATCH_SIZE, "a pipe's BatchSize is {size}");
    }
}
