//! The Step Functions endpoint of `sluice dev` as `aws-sdk-sfn` sees it,
//! over real HTTP on 127.0.0.1: every operation, each error with Step
//! Functions' code, a failed and a timed-out execution's StartSyncExecution
//! answer (200, with status, error and cause), and `sluice-aws`'s adapter
//! over it. The AWS CLI is checked against a running `sluice dev` by
//! `make check-aws` (scripts/sfn-cli-check.sh).

mod endpoint;
mod errors;
mod operations;
