//! What every step Lambda's `bootstrap` shares, so that a function's
//! `main` is one call of [`serve_step`] with its service and its handler,
//! and its handler reports failures as [`StepFailure`].
//!
//! # Layout
//!
//! - `serve`: [`serve_step`], the cold start, the invocation loop, and the rebuild that re-reads secrets.
//! - `init_error`: a failed cold start reported to the Runtime API (`/runtime/init/error`).
//! - `failure`: [`StepFailure`], a step's error as the report Step Functions matches.
//! - `start`: the services built from the environment (`sluice_config`), secrets resolved.
//! - `secrets`: secrets read from Secrets Manager at cold start.
//! - [`sqs_batch`]: an SQS event's records handled one by one, failures reported per record.
//! - [`aws_calls`]: what the services built at cold start call in AWS (each function's `AWS_CALLS`).

pub mod aws_calls;
mod failure;
mod init_error;
mod secrets;
mod serve;
pub mod sqs_batch;
pub mod start;

pub use failure::StepFailure;
pub use init_error::{INIT_ERROR_TYPE, report_init_error};
pub use serve::{CredentialRefusal, PrintsMetrics, REREAD_AFTER, serve_step};
pub use sluice_aws::{AwsUse, Resource};
pub use start::{
    StartError, catch_up_from_env, core_from_env, fetch_from_env, sheet_from_env, shop_from_env, store_from_env,
};
