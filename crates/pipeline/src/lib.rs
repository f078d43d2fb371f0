//! sluice's pipeline steps: plain typed async functions over shared
//! [`Steps`], called by the state machine `statemachine/pipeline.asl.json`
//! through Lambda in AWS (`functions/*`) and through the local interpreter
//! in `sluice dev`. Their JSON is [`step_io`].
//!
//! The shop path, per pipe batch: [`Steps::plan_batch`] splits the batch
//! into FIFO groups; for each item of a group, in order,
//! [`Steps::ensure_token`] makes sure the mall has a usable token,
//! [`Steps::fetch`] calls the Admin API within the mall's bucket, and
//! [`Steps::store`] appends the snapshot; a failing item goes through
//! [`Steps::record_failure`], and it and every later item of its group are
//! reported in `batchItemFailures`.
//!
//! # Layout
//!
//! - [`config`]: the settings.
//! - [`env_config`]: [`PipelineEnv`], the settings and connections of a
//!   step Lambda, read from environment variables.
//! - [`steps`]: [`Steps`], the services every step shares.
//! - [`step_io`]: the steps' inputs and outputs (the contract with the
//!   definition).
//! - [`json_task`]: [`call_json`], a step called with JSON, as Lambda and
//!   the local interpreter call it.
//! - `plan`, `token_step`, `fetch_step`, `store_step`, `failure_step`: one
//!   step each.

pub mod config;
pub mod env_config;
mod failure_step;
mod fetch_step;
pub mod json_task;
mod plan;
pub mod step_io;
pub mod steps;
mod store_step;
mod token_step;

pub use config::PipelineConfig;
pub use env_config::{EnvError, PipelineEnv, StartError};
pub use json_task::call_json;
pub use steps::Steps;
pub use token_step::{fingerprint, stored_token};
