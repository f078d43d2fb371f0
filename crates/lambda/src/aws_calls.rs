//! What the functions call in AWS, by the service their cold start builds
//! (`start`): every one reads its secrets from Secrets Manager, and the
//! sheet service also asks for flushes on the flush queue, the catch-up
//! service queues its next run on the catch-up queue. Each function
//! crate names the list its `main` starts as its `AWS_CALLS`, which
//! `tests/tests/template_iam.rs` checks against that function's IAM policy
//! in `infra/template.yaml`. The calls themselves are the adapters' lists
//! (`sluice_aws::api_calls`), which their tests check.

use sluice_aws::{AwsUse, Resource, SecretsReader, SqsDelayQueue};

/// GetSecretValue on each secret a `…_SECRET_ARN` variable names
/// (`start::resolve`, and the Redis password in `start::connect`).
pub const READS_SECRETS: AwsUse = AwsUse { calls: SecretsReader::CALLS, resource: Resource::EachSecretArn };

/// `core_from_env`, `shop_from_env` and `store_from_env`: secrets only.
pub const CORE_CALLS: &[AwsUse] = &[READS_SECRETS];

/// `sheet_from_env`: secrets, and the flush trigger's sends on the flush queue.
pub const SHEET_CALLS: &[AwsUse] = &[
    READS_SECRETS,
    AwsUse { calls: SqsDelayQueue::SEND_CALLS, resource: Resource::Variable("SLUICE_FLUSH_QUEUE_URL") },
];

/// `fetch_from_env`: secrets, and a catch-up request for each hand-over to
/// the catch-up queue.
pub const FETCH_CALLS: &[AwsUse] = CATCH_UP_CALLS;

/// `catch_up_from_env`: secrets, and each run's next request sent to the
/// catch-up queue.
pub const CATCH_UP_CALLS: &[AwsUse] = &[
    READS_SECRETS,
    AwsUse { calls: SqsDelayQueue::SEND_CALLS, resource: Resource::Variable("SLUICE_CATCH_UP_QUEUE_URL") },
];

/// Each cold start of `start` by its name, with what the service it builds
/// calls: a function's `AWS_CALLS` is the list of the start its `main`
/// calls (`tests/tests/template_iam.rs` reads `main.rs` to check it).
pub const BY_START: &[(&str, &[AwsUse])] = &[
    ("core_from_env", CORE_CALLS),
    ("shop_from_env", CORE_CALLS),
    ("store_from_env", CORE_CALLS),
    ("sheet_from_env", SHEET_CALLS),
    ("fetch_from_env", FETCH_CALLS),
    ("catch_up_from_env", CATCH_UP_CALLS),
];
