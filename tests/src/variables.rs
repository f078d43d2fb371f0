//! The environment each function gets from `infra/template.yaml` against
//! what its code reads: a variable a function needs that the template does
//! not set would stop its cold start in AWS, and one the template sets
//! that no configuration reads is a setting that does nothing.

use crate::template::{block, resources_of_type, variables};
use std::collections::BTreeSet;

/// What each function reads from its environment beyond the `Globals`
/// (which every function reads): the contract between the template and
/// the functions' settings (`sluice_config`'s structs per deployable). A
/// secret is only ever an ARN there.
pub const FUNCTION_VARIABLES: &[(&str, &[&str])] = &[
    (
        "IngestFunction",
        &[
            "SLUICE_QUEUE_URL",
            "SLUICE_API_KEYS_SECRET_ARN",
            "SLUICE_CATCH_UP_QUEUE_URL",
            "SLUICE_FLOW_MAX_QUEUED",
            "SLUICE_SHEET_MAX_QUEUED",
        ],
    ),
    ("PlanBatchFunction", &["SLUICE_MAP_MAX_CONCURRENCY"]),
    (
        "EnsureTokenFunction",
        &[
            "SLUICE_CAFE24_CLIENT_ID",
            "SLUICE_CAFE24_CLIENT_SECRET_ARN",
            "SLUICE_BUCKET_CAPACITY",
            "SLUICE_BUCKET_LEAK_PER_SEC",
            "SLUICE_ALERT_URL_SECRET_ARN",
        ],
    ),
    (
        "FetchFunction",
        &[
            "SLUICE_CATCH_UP_QUEUE_URL",
            "SLUICE_CAFE24_CLIENT_ID",
            "SLUICE_CAFE24_CLIENT_SECRET_ARN",
            "SLUICE_BUCKET_CAPACITY",
            "SLUICE_BUCKET_LEAK_PER_SEC",
            "SLUICE_ALERT_URL_SECRET_ARN",
        ],
    ),
    ("StoreFunction", &["SLUICE_BUCKET_CAPACITY", "SLUICE_BUCKET_LEAK_PER_SEC"]),
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
            "SLUICE_SHEETS_VALUE_INPUT",
            "SLUICE_ALERT_URL_SECRET_ARN",
        ],
    ),
    (
        "MallDrainFunction",
        &[
            "SLUICE_CATCH_UP_QUEUE_URL",
            "SLUICE_FLOW_MAX_QUEUED",
            "SLUICE_CAFE24_CLIENT_ID",
            "SLUICE_CAFE24_CLIENT_SECRET_ARN",
            "SLUICE_BUCKET_CAPACITY",
            "SLUICE_BUCKET_LEAK_PER_SEC",
            "SLUICE_ALERT_URL_SECRET_ARN",
        ],
    ),
    ("DrainFunction", &["SLUICE_DATABASE_URL_SECRET_ARN"]),
];

/// What every function reads, from `Globals`.
pub const GLOBAL_VARIABLES: &[&str] = &[
    "SLUICE_REDIS_URL",
    "SLUICE_REDIS_PASSWORD_SECRET_ARN",
    "SLUICE_REDIS_CLUSTER",
    "SLUICE_SECRET_TTL_SECS",
    "SLUICE_KEY_PREFIX",
    "SLUICE_STAGE",
];

/// Where `template`'s environments and the code disagree, one line each:
/// a variable a function reads that the template does not give it, one
/// the template gives that the function does not read, one no
/// configuration reads at all, and a function without a row above.
pub fn variable_problems(template: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let globals: BTreeSet<String> = variables(&block(template, "Globals:")).into_iter().map(|(k, _)| k).collect();
    compare("every function (Globals)", GLOBAL_VARIABLES, &globals, &mut problems);

    let deployed = resources_of_type(template, "AWS::Serverless::Function");
    for function in &deployed {
        match FUNCTION_VARIABLES.iter().find(|(f, _)| f == function) {
            Some((_, reads)) => {
                // A variable of the Globals a function sets itself is its
                // own value of one it reads anyway (ingest's cache user).
                let own = variables(&block(template, &format!("{function}:")))
                    .into_iter()
                    .map(|(k, _)| k)
                    .filter(|k| !globals.contains(k))
                    .collect();
                compare(function, reads, &own, &mut problems);
            }
            None => problems.push(format!("{function} is deployed but has no row in FUNCTION_VARIABLES")),
        }
    }
    for (function, _) in FUNCTION_VARIABLES {
        if !deployed.contains(*function) {
            problems
                .push(format!("{function} has a row in FUNCTION_VARIABLES but the template deploys no such function"));
        }
    }

    let known = sluice_config::all_tables();
    let unread: BTreeSet<&str> = template
        .lines()
        .filter_map(|l| l.trim().split(':').next().filter(|n| n.starts_with(sluice_config::PREFIX)))
        .filter(|name| !known.contains(&format!("`{name}`")))
        .collect();
    for name in unread {
        problems.push(format!("the template sets {name}, which no configuration reads (sluice_config)"));
    }
    problems
}

/// A missing and an unread variable of `who`, each a problem.
fn compare(who: &str, reads: &[&str], set: &BTreeSet<String>, problems: &mut Vec<String>) {
    for name in reads.iter().filter(|n| !set.contains(**n)) {
        problems.push(format!("{who} reads {name}, which the template does not set"));
    }
    for name in set.iter().filter(|n| !reads.contains(&n.as_str())) {
        problems.push(format!("the template sets {name} for {who}, which does not read it"));
    }
}
