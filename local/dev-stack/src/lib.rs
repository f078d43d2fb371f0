//! sluice on one machine: the deployed state machine run by the local
//! interpreter with the pipeline's steps as its tasks, fed by a pipe that
//! pulls batches from the FIFO queue as EventBridge Pipes does in AWS.
//! `sluice dev` and the end-to-end tests assemble these.
//!
//! Errors are `anyhow` with context: this crate is assembly, and what it
//! returns is only ever printed (by `sluice`) or unwrapped (by tests and
//! benchmarks), never matched on.
//!
//! # Layout
//!
//! - [`step_functions`]: the steps as task handlers, the definition and its local substitutions.
//! - [`sfn_api`]: the Step Functions endpoint (AWS JSON 1.0) serving the state machine's executions.
//! - [`pipe`]: the queue → state machine pipe, starting executions through `aws-sdk-sfn`.
//! - [`ingest_counts`]: ingest's counts, from its counters or its processes' EMF lines.
//! - [`function_processes`]: `--functions processes`: the functions' binaries under the local Lambda service (`sluice-lambda-runtime`).
//! - [`delay_worker`]: a delay queue's consumer loop (a Lambda's SQS event source in AWS).
//! - [`flush_worker`]: the flush queue → flush step worker (the flush function's event source in AWS).
//! - [`catch_up_worker`]: the catch-up queue → catch-up run worker (flow control per mall).
//! - [`metrics_endpoint`]: `GET /metrics` (Prometheus text) of `sluice dev`.
//! - [`dev_queues`]: the queues `sluice dev` runs on and how each scans its groups.
//! - [`drain_task`]: the drain of the snapshot streams into PostgreSQL, with its alert.
//! - [`stack_setup`]: the consumer lease taken, the listeners bound.
//! - [`dev_config`]: what `sluice dev` lets a user choose, one struct.
//! - [`dev_stack`]: all of it assembled with ingest and the SQS and Step Functions endpoints, as `sluice dev` runs it.

pub mod catch_up_worker;
pub mod delay_worker;
pub mod dev_config;
pub mod dev_queues;
pub mod dev_stack;
pub mod drain_task;
pub mod flush_worker;
pub mod function_processes;
pub mod ingest_counts;
pub mod metrics_endpoint;
pub mod pipe;
pub mod sfn_api;
pub mod stack_setup;
pub mod step_functions;

pub use catch_up_worker::{CatchUpStats, CatchUpWorker};
pub use delay_worker::{DelayWorkerConfig, Handled, RequestHandler, run_delay_worker};
pub use dev_config::STEP_CONCURRENCY;
pub use dev_queues::{CATCH_UP_DLQ, CATCH_UP_QUEUE};
pub use dev_stack::{DevConfig, DevStack, EVENTS_DLQ, EVENTS_QUEUE, FLUSH_DLQ, FLUSH_QUEUE, take_consumer_lease};
pub use drain_task::{DrainSetup, DrainTask};
pub use flush_worker::{FlushStats, Flusher};
pub use function_processes::{FunctionsMode, ProcessFunctions};
pub use ingest_counts::IngestCounts;
pub use pipe::{Pipe, PipeConcurrency, PipeConfig, PipeStats};
pub use step_functions::{PIPELINE_DEFINITION, PIPELINE_NAME, StepLimits, registry, substitutions};
