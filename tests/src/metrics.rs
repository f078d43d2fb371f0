//! The metrics the template's alarms and dashboard name, against what
//! publishes them. `Sluice` metrics come from the code's EMF lines: their
//! names from the emitters' counter lists (`sluice_ingest::counters`,
//! `sluice_pipeline::step_metrics`), their one dimension set
//! (`sluice_domain::emf::DIMENSIONS`), the `Function` each function puts
//! there. An alarm on a metric nobody emits never fires and a dashboard
//! line stays empty, with no error anywhere. `AWS/*` metrics are the
//! services' own: their names and dimension names are checked against
//! [`AWS_NAMESPACES`].

use crate::metric_references::{MetricReference, metric_references};
use crate::template::{functions_and_binaries, root};
use sluice_domain::emf::{Counter, DIMENSIONS, NAMESPACE};
use std::collections::BTreeSet;

/// An AWS namespace: the dimension names its metrics are published under
/// and the metrics of it this stack may name, from the service's
/// CloudWatch metrics page (add one from there before naming it).
#[derive(Debug)]
pub struct AwsNamespace {
    pub name: &'static str,
    pub dimensions: &'static [&'static str],
    pub metrics: &'static [&'static str],
}

pub const AWS_NAMESPACES: &[AwsNamespace] = &[
    AwsNamespace {
        name: "AWS/SQS",
        dimensions: &["QueueName"],
        metrics: &[
            "ApproximateAgeOfOldestMessage",
            "ApproximateNumberOfGroupsWithInflightMessages",
            "ApproximateNumberOfMessagesDelayed",
            "ApproximateNumberOfMessagesNotVisible",
            "ApproximateNumberOfMessagesVisible",
            "NumberOfDeduplicatedSentMessages",
            "NumberOfEmptyReceives",
            "NumberOfMessagesDeleted",
            "NumberOfMessagesReceived",
            "NumberOfMessagesSent",
            "SentMessageSize",
        ],
    },
    AwsNamespace {
        name: "AWS/Lambda",
        dimensions: &["FunctionName", "Resource", "ExecutedVersion"],
        metrics: &[
            "Invocations",
            "Errors",
            "Throttles",
            "Duration",
            "ConcurrentExecutions",
            "DeadLetterErrors",
            "DestinationDeliveryFailures",
            "UnreservedConcurrentExecutions",
        ],
    },
    AwsNamespace {
        name: "AWS/States",
        dimensions: &["StateMachineArn"],
        metrics: &[
            "ExecutionsStarted",
            "ExecutionsSucceeded",
            "ExecutionsFailed",
            "ExecutionsAborted",
            "ExecutionsTimedOut",
            "ExecutionThrottled",
            "ExecutionTime",
        ],
    },
    AwsNamespace {
        name: "AWS/EventBridge/Pipes",
        dimensions: &["PipeName", "AwsAccountId"],
        metrics: &[
            "Concurrency",
            "Duration",
            "EventCount",
            "EventSize",
            "ExecutionThrottled",
            "ExecutionTimeout",
            "ExecutionFailed",
            "ExecutionPartiallyFailed",
            "Invocations",
            "TargetStageDuration",
            "TargetStageFailed",
            "TargetStagePartiallyFailed",
        ],
    },
    // A serverless cache publishes under `clusterId` only (a node-based
    // cluster's `CacheClusterId` finds nothing of it).
    AwsNamespace {
        name: "AWS/ElastiCache",
        dimensions: &["clusterId"],
        metrics: &[
            "BytesUsedForCache",
            "ElastiCacheProcessingUnits",
            "ThrottledCmds",
            "CurrConnections",
            "NewConnections",
            "CacheHitRate",
            "Evictions",
            "SuccessfulReadRequestLatency",
            "SuccessfulWriteRequestLatency",
        ],
    },
];

/// The stack's stage as the template gives it to a dimension.
const STAGE_VALUES: [&str; 2] = ["!Ref Stage", "${Stage}"];

fn emf_names<S>(counters: &[Counter<S>]) -> BTreeSet<&'static str> {
    counters.iter().flat_map(|c| c.emf.iter().map(|(name, _)| *name)).collect()
}

/// Who emits `Sluice` metrics: each function's `Function` value, with the
/// metrics it can emit. Ingest's are its counters; every other function
/// serves its metrics under the name its `main` gives `serve_step`, which
/// must be its crate's (`sluice-fn-<name>`): the drain its own
/// (`sluice_fn_drain::metrics`), the step functions the pipeline's.
fn emitters(template: &str, problems: &mut Vec<String>) -> Vec<(String, BTreeSet<&'static str>)> {
    let ingest = (sluice_fn_ingest::metrics::FUNCTION.to_owned(), emf_names(sluice_ingest::counters::COUNTERS));
    let steps = emf_names(sluice_pipeline::step_metrics::COUNTERS);
    let drain: BTreeSet<&'static str> = sluice_fn_drain::metrics::metric_names().into_iter().collect();
    let mut all = vec![ingest];
    for (_, binary) in functions_and_binaries(template) {
        let Some(name) = binary.strip_prefix("sluice-fn-").filter(|n| *n != sluice_fn_ingest::metrics::FUNCTION) else {
            continue;
        };
        let main = std::fs::read_to_string(root().join("functions").join(name).join("src/main.rs")).unwrap_or_default();
        if !main.contains(&format!("serve_step(\"{name}\"")) {
            problems.push(format!("functions/{name}/src/main.rs does not serve_step(\"{name}\", …): its metrics' Function would not be {name}"));
        }
        let emits = if name == sluice_fn_drain::metrics::FUNCTION { drain.clone() } else { steps.clone() };
        all.push((name.to_owned(), emits));
    }
    all
}

/// Every metric the template names that nothing publishes as named, one
/// line each.
pub fn metric_problems(template: &str) -> Vec<String> {
    let (references, mut problems) = metric_references(template);
    let emitters = emitters(template, &mut problems);
    for reference in &references {
        if reference.namespace == NAMESPACE {
            check_ours(reference, &emitters, &mut problems);
        } else if let Some(aws) = AWS_NAMESPACES.iter().find(|n| n.name == reference.namespace) {
            check_aws(reference, aws, &mut problems);
        } else {
            problems.push(format!(
                "{}: namespace {:?} is neither {NAMESPACE} (the code's) nor one of AWS_NAMESPACES",
                reference.place, reference.namespace
            ));
        }
    }
    problems
}

fn check_ours(r: &MetricReference, emitters: &[(String, BTreeSet<&str>)], problems: &mut Vec<String>) {
    let names: BTreeSet<&str> = r.dimensions.iter().map(|(n, _)| n.as_str()).collect();
    if names != BTreeSet::from(DIMENSIONS) {
        problems.push(format!(
            "{}: {NAMESPACE}/{} under dimensions {names:?}; the code publishes under exactly {DIMENSIONS:?}",
            r.place, r.name
        ));
    }
    let value = |name: &str| r.dimensions.iter().find(|(n, _)| n == name).and_then(|(_, v)| v.as_deref());
    if let Some(stage) = value("Stage").filter(|s| !STAGE_VALUES.contains(s)) {
        problems.push(format!("{}: Stage is {stage}, not the stack's Stage", r.place));
    }
    let candidates: Vec<&(String, BTreeSet<&str>)> = match value("Function") {
        Some(function) => {
            let found: Vec<_> = emitters.iter().filter(|(f, _)| f == function).collect();
            if found.is_empty() {
                problems.push(format!("{}: Function {function} is no deployed function", r.place));
            }
            found
        }
        None => emitters.iter().collect(),
    };
    if !candidates.is_empty() && !candidates.iter().any(|(_, metrics)| metrics.contains(r.name.as_str())) {
        let who: Vec<&str> = candidates.iter().map(|(f, _)| f.as_str()).collect();
        problems.push(format!("{}: no code emits {NAMESPACE}/{:?} (for {who:?})", r.place, r.name));
    }
}

fn check_aws(r: &MetricReference, aws: &AwsNamespace, problems: &mut Vec<String>) {
    if !aws.metrics.contains(&r.name.as_str()) {
        problems.push(format!("{}: {} has no metric {:?} (AWS_NAMESPACES)", r.place, aws.name, r.name));
    }
    for (name, _) in r.dimensions.iter().filter(|(n, _)| !aws.dimensions.contains(&n.as_str())) {
        problems
            .push(format!("{}: {} publishes under {:?}, not dimension {name:?}", r.place, aws.name, aws.dimensions));
    }
}
