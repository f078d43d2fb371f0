//! sluice on one machine: the deployed state machine run by the local
//! interpreter with the pipeline's steps as its tasks, fed by a pipe that
//! pulls batches from the FIFO queue as EventBridge Pipes does in AWS.
//! `sluice dev` and the end-to-end tests assemble these.
//!
//! # Layout
//!
//! - [`step_functions`]: the steps as task handlers, the definition and its
//!   local substitutions.
//! - [`pipe`]: the queue → state machine pipe.
//! - [`dev_stack`]: all of it assembled with ingest and the SQS endpoint,
//!   as `sluice dev` runs it.

pub mod dev_stack;
pub mod pipe;
pub mod step_functions;

pub use dev_stack::{DevConfig, DevStack, EVENTS_DLQ, EVENTS_QUEUE};
pub use pipe::{Pipe, PipeConfig, PipeStats};
pub use step_functions::{PIPELINE_DEFINITION, registry, substitutions};
