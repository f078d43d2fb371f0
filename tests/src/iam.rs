//! Each function's AWS calls against its IAM policies in
//! `infra/template.yaml`. The calls come from the code: each function
//! crate's `AWS_CALLS` names the adapters' lists it uses (checked by the
//! adapters' tests against what they send) and the resource each acts on,
//! by the environment variable that names it. The policies are SAM policy
//! templates, expanded here as SAM expands them.

use crate::template::{block, function_environment, functions_and_binaries, referenced, root};
use sluice_aws::{AwsUse, Resource};
use sluice_lambda::aws_calls::BY_START;

/// Each deployed binary's calls, from its crate.
pub const FUNCTION_CALLS: &[(&str, &[AwsUse])] = &[
    ("sluice-fn-ingest", sluice_fn_ingest::AWS_CALLS),
    ("sluice-fn-plan-batch", sluice_fn_plan_batch::AWS_CALLS),
    ("sluice-fn-ensure-token", sluice_fn_ensure_token::AWS_CALLS),
    ("sluice-fn-fetch", sluice_fn_fetch::AWS_CALLS),
    ("sluice-fn-store", sluice_fn_store::AWS_CALLS),
    ("sluice-fn-record-failure", sluice_fn_record_failure::AWS_CALLS),
    ("sluice-fn-buffer-row", sluice_fn_buffer_row::AWS_CALLS),
    ("sluice-fn-flush-sheet", sluice_fn_flush_sheet::AWS_CALLS),
    ("sluice-fn-catch-up", sluice_fn_catch_up::AWS_CALLS),
    ("sluice-fn-drain", sluice_fn_drain::AWS_CALLS),
];

/// The functions whose `main` builds its own service rather than one of
/// `sluice_lambda`'s starts: their `AWS_CALLS` are beside that code.
pub const OWN_STARTS: &[&str] = &["ingest", "drain"];

/// A SAM policy template: its name, the parameter naming its resource, and
/// the actions it allows on it.
#[derive(Debug)]
pub struct PolicyTemplate {
    pub name: &'static str,
    pub resource_parameter: &'static str,
    pub actions: &'static [&'static str],
}

/// The SAM policy templates a function of the template may use, as SAM
/// expands them (`samtranslator/policy_templates_data/policy_templates.json`
/// of aws/serverless-application-model, the list at
/// <https://docs.aws.amazon.com/serverless-application-model/latest/developerguide/serverless-policy-template-list.html>).
/// A policy not listed here is reported, not assumed to allow anything.
pub const SAM_POLICY_TEMPLATES: &[PolicyTemplate] = &[
    PolicyTemplate { name: "SQSSendMessagePolicy", resource_parameter: "QueueName", actions: &["sqs:SendMessage*"] },
    PolicyTemplate {
        name: "SQSPollerPolicy",
        resource_parameter: "QueueName",
        actions: &[
            "sqs:ChangeMessageVisibility",
            "sqs:ChangeMessageVisibilityBatch",
            "sqs:DeleteMessage",
            "sqs:DeleteMessageBatch",
            "sqs:GetQueueAttributes",
            "sqs:ReceiveMessage",
        ],
    },
    PolicyTemplate {
        name: "AWSSecretsManagerGetSecretValuePolicy",
        resource_parameter: "SecretArn",
        actions: &["secretsmanager:GetSecretValue"],
    },
    PolicyTemplate {
        name: "LambdaInvokePolicy",
        resource_parameter: "FunctionName",
        actions: &["lambda:InvokeFunction"],
    },
];

/// What one policy of a function allows: `actions` (IAM patterns) on the
/// resource with logical id `resource`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub policy: String,
    pub actions: Vec<&'static str>,
    pub resource: String,
}

/// The grants of `function`'s `Policies:`, and a problem for each policy
/// that cannot be read as one of [`SAM_POLICY_TEMPLATES`].
pub fn grants(template: &str, function: &str) -> (Vec<Grant>, Vec<String>) {
    let (mut grants, mut problems) = (Vec::new(), Vec::new());
    for item in policy_items(&block(template, &format!("{function}:"))) {
        let name = item.split(':').next().unwrap_or_default().trim();
        // An inline statement, alone or under an `!If` (the drain's kms:Decrypt on a customer-managed key):
        // it grants nothing this check counts on, so a call it alone would allow is still reported.
        if name == "Statement" || name.starts_with("!If") {
            continue;
        }
        let Some(known) = SAM_POLICY_TEMPLATES.iter().find(|t| t.name == name) else {
            problems.push(format!("{function}: policy {name} is not a SAM policy template this check knows"));
            continue;
        };
        let value = item
            .split_once(&format!("{}:", known.resource_parameter))
            .map(|(_, v)| v.split(['}', '\n']).next().unwrap_or_default().trim());
        match value.and_then(referenced) {
            Some(resource) => grants.push(Grant {
                policy: name.to_owned(),
                actions: known.actions.to_vec(),
                resource: resource.to_owned(),
            }),
            None => problems.push(format!("{function}: {name} names no resource by !Ref or !GetAtt")),
        }
    }
    (grants, problems)
}

/// The items of the `Policies:` list in `lines`, each its text without the
/// `- `: one line (`Name: {Param: value}`, or a managed policy's name) or
/// several (`Name:` with `Param: value` below).
fn policy_items(lines: &[&str]) -> Vec<String> {
    let policies = block(&lines.join("\n"), "Policies:").into_iter().map(str::to_owned).collect::<Vec<_>>();
    // An item starts at the list's own indentation; a `- ` deeper in belongs to the item above (an `!If`'s).
    let depth = |l: &str| l.len() - l.trim_start().len();
    let item_depth = policies.iter().find(|l| l.trim_start().starts_with("- ")).map(|l| depth(l));
    let mut items: Vec<String> = Vec::new();
    for line in policies {
        match line.trim_start().strip_prefix("- ").filter(|_| Some(depth(&line)) == item_depth) {
            Some(first) => items.push(first.to_owned()),
            None => {
                if let Some(item) = items.last_mut() {
                    item.push('\n');
                    item.push_str(line.trim());
                }
            }
        }
    }
    items
}

/// Whether the IAM action pattern `pattern` (`*` and `?` wildcards, case
/// ignored, as IAM matches actions) covers `action`.
pub fn action_allowed(pattern: &str, action: &str) -> bool {
    fn matches(p: &[u8], a: &[u8]) -> bool {
        match (p.first(), a.first()) {
            (None, None) => true,
            (Some(b'*'), _) => matches(&p[1..], a) || (!a.is_empty() && matches(p, &a[1..])),
            (Some(b'?'), Some(_)) => matches(&p[1..], &a[1..]),
            (Some(x), Some(y)) if x.eq_ignore_ascii_case(y) => matches(&p[1..], &a[1..]),
            _ => false,
        }
    }
    matches(pattern.as_bytes(), action.as_bytes())
}

/// Every call a deployed function's code makes that its policies do not
/// allow on the resource its environment names, one line each; also a
/// function without a row in [`FUNCTION_CALLS`], and a call on a variable
/// the template does not give the function.
pub fn iam_problems(template: &str) -> Vec<String> {
    let mut problems = Vec::new();
    for (function, binary) in functions_and_binaries(template) {
        let Some((_, uses)) = FUNCTION_CALLS.iter().find(|(b, _)| *b == binary) else {
            problems.push(format!("{function} builds {binary}, which has no row in FUNCTION_CALLS"));
            continue;
        };
        let (grants, unreadable) = grants(template, &function);
        problems.extend(unreadable);
        let environment = function_environment(template, &function);
        for usage in uses.iter() {
            let targets: Vec<(&str, &str)> = match usage.resource {
                Resource::Variable(name) => match environment.iter().find(|(k, _)| k == name) {
                    Some((k, v)) => vec![(k.as_str(), v.as_str())],
                    None => {
                        problems.push(format!("{function} calls AWS on the resource in {name}, which it is not given"));
                        continue;
                    }
                },
                Resource::EachSecretArn => environment
                    .iter()
                    .filter(|(k, _)| k.ends_with("_SECRET_ARN"))
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect(),
            };
            for (variable, value) in targets {
                let Some(resource) = referenced(value) else {
                    problems.push(format!("{function}: {variable} is {value}, not a !Ref of a resource of the stack"));
                    continue;
                };
                for call in usage.calls {
                    let allowed = grants
                        .iter()
                        .any(|g| g.resource == resource && g.actions.iter().any(|p| action_allowed(p, call.action)));
                    if !allowed {
                        problems.push(format!(
                            "{function} calls {} ({}) on {resource} ({variable}), which its policies do not allow",
                            call.operation, call.action
                        ));
                    }
                }
            }
        }
    }
    problems
}

/// Where a step function's declared calls are not those of the service its
/// `main` starts: its `AWS_CALLS` must be the list
/// `sluice_lambda::aws_calls::BY_START` gives for the `…_from_env` that its
/// `functions/<name>/src/main.rs` calls. (Ingest and the drain build their
/// own services, [`OWN_STARTS`]; their lists are beside that code.)
pub fn declared_calls_problems(template: &str) -> Vec<String> {
    let mut problems = Vec::new();
    for (_, binary) in functions_and_binaries(template) {
        let Some(name) = binary.strip_prefix("sluice-fn-").filter(|n| !OWN_STARTS.contains(n)) else { continue };
        let main = std::fs::read_to_string(root().join("functions").join(name).join("src/main.rs")).unwrap_or_default();
        let started: Vec<_> =
            BY_START.iter().filter(|(start, _)| main.contains(&format!("sluice_lambda::{start}"))).collect();
        let declared = FUNCTION_CALLS.iter().find(|(b, _)| *b == binary).map(|(_, uses)| *uses);
        match (started.as_slice(), declared) {
            ([(start, calls)], Some(declared)) if *calls != declared => {
                problems.push(format!("{binary}: main starts {start}, whose calls are not its AWS_CALLS"));
            }
            ([_], Some(_)) => {}
            _ => problems.push(format!("{binary}: its main.rs calls no one sluice_lambda::…_from_env of BY_START")),
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn action_patterns_match_as_iam_does() {
        assert!(action_allowed("sqs:SendMessage*", "sqs:SendMessage"));
        assert!(action_allowed("SQS:sendmessage", "sqs:SendMessage"));
        assert!(action_allowed("sqs:*", "sqs:ReceiveMessage"));
        assert!(action_allowed("sqs:?eceiveMessage", "sqs:ReceiveMessage"));
        assert!(!action_allowed("sqs:SendMessage*", "sqs:ReceiveMessage"));
        assert!(!action_allowed("sqs:SendMessage", "sqs:SendMessageBatch"));
    }

    #[test]
    fn both_forms_of_a_policy_item_are_read() {
        let sample = "  F:\n    Properties:\n      Policies:\n        - SQSSendMessagePolicy:\n            QueueName: !GetAtt Q.QueueName\n        - AWSSecretsManagerGetSecretValuePolicy: {SecretArn: !Ref S}\n        - !If\n          - C\n          - Statement:\n              - Effect: Allow\n          - !Ref AWS::NoValue\n        - AmazonS3FullAccess\n      Events:\n";
        let (grants, problems) = grants(sample, "F");
        let read: Vec<(&str, &str)> = grants.iter().map(|g| (g.policy.as_str(), g.resource.as_str())).collect();
        assert_eq!(read, [("SQSSendMessagePolicy", "Q"), ("AWSSecretsManagerGetSecretValuePolicy", "S")]);
        assert_eq!(problems, ["F: policy AmazonS3FullAccess is not a SAM policy template this check knows"]);
    }
}
