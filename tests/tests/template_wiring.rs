//! The SAM template and the code agree: every `${…}` placeholder in a
//! state machine definition is one of the template's
//! `DefinitionSubstitutions` (and every substitution is used), every
//! function the template builds is a crate in `functions/` and every crate
//! there is deployed, timeouts fit, secrets travel as ARNs, every function
//! has its alarm, the pipes are alike. A mismatch would deploy a state
//! machine calling nothing, or a function built from nowhere.
//!
//! Beside this file: `template_variables.rs` (each function's environment),
//! `template_iam.rs` (its AWS calls against its IAM policy),
//! `template_metrics.rs` (what the alarms and the dashboard watch). The
//! template is read as text (`sluice_tests::template`).

use sluice_tests::template::{
    block, built_binaries, dashboard_body, function_crates, function_environment, number, parameters, placeholders,
    readable_secrets, resources_of_type, root, substitutions, template, variables,
};
use sluice_tests::variables::FUNCTION_VARIABLES;
use std::collections::BTreeSet;

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

/// The dashboard body (a `!Sub` block) is JSON once its `${…}` are filled:
/// CloudFormation would only refuse it at deploy time.
#[test]
fn the_dashboard_body_is_json() {
    let mut text = dashboard_body(&template()).expect("a dashboard");
    while let Some(open) = text.find("${") {
        let close = open + text[open..].find('}').expect("a closed placeholder");
        text.replace_range(open..=close, "X");
    }
    let dashboard: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}:\n{text}"));
    assert!(dashboard["widgets"].as_array().is_some_and(|w| w.len() >= 4));
}

/// Longest Express execution Step Functions allows, seconds.
const EXPRESS_MAX_S: u64 = 300;
/// A pipe's invocation, its target included, is capped at 5 minutes: a
/// longer execution is cut off by the pipe (ExecutionTimeout) and its batch
/// comes back after the visibility timeout, its work done twice.
const PIPE_INVOCATION_CAP_S: u64 = 300;
/// What Pipes adds between receiving a batch and starting the execution
/// (polling, the StartSyncExecution call), beyond any batching window: a
/// margin, not a measured number. The execution also stays this far under
/// the pipe's cap.
const PIPE_OVERHEAD_S: u64 = 30;

/// A batch must never become visible again while a pipe may still hold
/// it, nor an execution outlive its pipe's invocation: the execution's
/// timeout (statemachine/pipeline.asl.json) stays a margin under the
/// pipe's 5-minute cap and bounds every Lambda it calls; the event queue's
/// visibility timeout exceeds the longest a pipe can hold a batch (its
/// batching window, the cap, the pipe's overhead); the flush and mall
/// drain queues' visibility is six times their function's timeout, as AWS
/// advises. docs/deploy.md ("How long a message waits after its consumer
/// dies") states the same numbers.
#[test]
fn visibility_timeouts_outlast_what_holds_a_batch() {
    let template = template();
    let definition = std::fs::read_to_string(root().join("statemachine/pipeline.asl.json")).expect("definition");
    let definition: serde_json::Value = serde_json::from_str(&definition).expect("definition JSON");
    let execution = definition["TimeoutSeconds"].as_u64().expect("the pipeline sets TimeoutSeconds");
    assert!(execution <= EXPRESS_MAX_S, "TimeoutSeconds {execution} is above Express's {EXPRESS_MAX_S} s");
    let under_cap = PIPE_INVOCATION_CAP_S - PIPE_OVERHEAD_S;
    assert!(
        execution <= under_cap,
        "TimeoutSeconds {execution} leaves less than {PIPE_OVERHEAD_S} s under the pipe's {PIPE_INVOCATION_CAP_S} s cap \
         (at most {under_cap})"
    );
    let machine = block(&template, "Pipeline:");
    assert!(machine.iter().any(|l| l.trim() == "Type: EXPRESS"), "the pipeline is an Express state machine");

    let pipe = block(&template, "Pipe1:");
    assert!(pipe.iter().any(|l| l.contains("InvocationType: REQUEST_RESPONSE")), "the pipe waits for the execution");
    let window = number(&pipe, "MaximumBatchingWindowInSeconds").unwrap_or(0);
    let held = window + PIPE_INVOCATION_CAP_S + PIPE_OVERHEAD_S;
    let events = number(&block(&template, "EventsQueue:"), "VisibilityTimeout").expect("EventsQueue VisibilityTimeout");
    assert!(
        events >= held,
        "events visibility {events} s < batching window {window} + the pipe's cap {PIPE_INVOCATION_CAP_S} + \
         {PIPE_OVERHEAD_S} s"
    );

    let global = number(&block(&template, "Globals:"), "Timeout").expect("a global function Timeout");
    let called: Vec<String> = substitutions(&template).into_iter().filter(|s| s.ends_with("Function")).collect();
    assert!(called.len() >= 6, "{called:?}");
    for function in &called {
        let timeout = number(&block(&template, &format!("{function}:")), "Timeout").unwrap_or(global);
        assert!(timeout < execution, "{function} may run {timeout} s, not less than the execution's {execution} s");
    }

    for (function, queue) in [("FlushSheetFunction", "FlushQueue"), ("MallDrainFunction", "MallDrainQueue")] {
        let lines = block(&template, &format!("{function}:"));
        let timeout = number(&lines, "Timeout").unwrap_or(global);
        let window = number(&lines, "MaximumBatchingWindowInSeconds").unwrap_or(0);
        let visibility = number(&block(&template, &format!("{queue}:")), "VisibilityTimeout")
            .unwrap_or_else(|| panic!("{queue} VisibilityTimeout"));
        assert!(
            visibility >= 6 * timeout + window,
            "{queue} visibility {visibility} s < 6 x {function}'s {timeout} s + window {window} s"
        );
    }
    // A catch-up run waits for budget up to its run budget, then finishes its fetches: within the timeout.
    let catch_up = number(&block(&template, "MallDrainFunction:"), "Timeout").unwrap_or(global);
    let run_budget = sluice_pipeline::CatchUpConfig::default().run_budget.as_secs();
    assert!(catch_up >= 2 * run_budget, "MallDrainFunction's {catch_up} s leaves no margin over {run_budget} s");
}

/// No secret's value reaches an environment: no `{{resolve:secretsmanager:…}}` (resolved once, at deploy
/// time, and shown in the function's configuration), no password in the Redis URL, and each
/// `…_SECRET_ARN` is a `!Ref` of a secret the template creates, or of a parameter naming an existing
/// one (`…SecretArn`, the database URL's), which that function's IAM policy (and no other secret) lets
/// it read.
#[test]
fn secrets_reach_functions_as_arns_only() {
    let template = template();
    let created = resources_of_type(&template, "AWS::SecretsManager::Secret");
    assert!(created.contains("CachePassword") && created.len() >= 5, "{created:?}");
    let given = parameters(&template).into_iter().filter(|p| p.ends_with("SecretArn"));
    let secrets: BTreeSet<String> = created.into_iter().chain(given).collect();
    assert!(secrets.contains("DatabaseUrlSecretArn"), "{secrets:?}");
    let globals = variables(&block(&template, "Globals:"));
    for (function, _) in FUNCTION_VARIABLES {
        let lines = block(&template, &format!("{function}:"));
        let mut needed = BTreeSet::new();
        // A function's own value of a Globals variable replaces it (ingest's cache password).
        for (name, value) in &function_environment(&template, function) {
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
        let environment = function_environment(&template, function);
        let redis_url = &environment.iter().find(|(k, _)| k == "SLUICE_REDIS_URL").expect("SLUICE_REDIS_URL").1;
        let user = redis_url.split_once("rediss://").and_then(|(_, rest)| rest.split_once('@')).map(|(user, _)| user);
        assert!(
            user.is_some_and(|user| !user.is_empty() && !user.contains(':')),
            "{function}: TLS, an ACL user, no password: {redis_url}"
        );
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

/// The drain runs every minute, one run at a time, and stops before the next: the schedule invokes
/// the drain function (through a role that may invoke only it) at `rate(1 minute)` with no flexible
/// window and no retries; the function's timeout fits in the minute with room above the margin in
/// which it starts no round; its reserved concurrency is 1, which its one consumer name assumes; and
/// the function, its schedule, role, logs and alarms exist only with a database (`HasDatabase`).
#[test]
fn the_drain_runs_every_minute_one_at_a_time_and_only_with_a_database() {
    let template = template();
    let schedule = block(&template, "DrainSchedule:").join("\n");
    for expected in [
        "Type: AWS::Scheduler::Schedule",
        "ScheduleExpression: rate(1 minute)",
        "FlexibleTimeWindow: {Mode: \"OFF\"}",
        "Arn: !GetAtt DrainFunction.Arn",
        "RoleArn: !GetAtt DrainScheduleRole.Arn",
        "MaximumRetryAttempts: 0",
    ] {
        assert!(schedule.contains(expected), "DrainSchedule lacks {expected:?}:\n{schedule}");
    }
    let role = block(&template, "DrainScheduleRole:").join("\n");
    assert!(role.contains("Service: scheduler.amazonaws.com") && role.contains("Action: lambda:InvokeFunction"));
    assert!(role.contains("Resource: !GetAtt DrainFunction.Arn"), "the role may invoke the drain only:\n{role}");

    let function = block(&template, "DrainFunction:");
    let timeout = number(&function, "Timeout").expect("the drain sets its Timeout");
    let margin = sluice_fn_drain::DEADLINE_MARGIN.as_secs();
    assert!(
        timeout <= 60 && timeout >= 2 * margin,
        "timeout {timeout} s: within the minute, above the {margin} s margin"
    );
    assert_eq!(number(&function, "ReservedConcurrentExecutions"), Some(1), "one run at a time");
    assert_eq!(number(&function, "MaximumRetryAttempts"), Some(0), "the next minute's run is the retry");

    for resource in ["DrainFunction", "DrainLogs", "DrainScheduleRole", "DrainSchedule", "DrainErrors", "DrainLagHigh"]
    {
        let lines = block(&template, &format!("{resource}:"));
        assert!(lines.iter().any(|l| l.trim() == "Condition: HasDatabase"), "{resource} exists only with a database");
    }
    let conditions = block(&template, "Conditions:").join("\n");
    assert!(conditions.contains("HasDatabase: !Not [!Equals [!Ref DatabaseUrlSecretArn, \"\"]]"), "{conditions}");
    assert!(
        resources_of_type(&template, "AWS::RDS::DBInstance").is_empty()
            && resources_of_type(&template, "AWS::RDS::DBCluster").is_empty(),
        "the stack drains into an existing database; it creates none"
    );
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
