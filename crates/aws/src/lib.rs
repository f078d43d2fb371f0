//! sluice's AWS adapters: the work queue on SQS FIFO, the delay queue on
//! an SQS standard queue, and the state machine on Step Functions.
//!
//! The adapters talk to SQS through `aws-sdk-sqs` and to Step Functions
//! through `aws-sdk-sfn`. With an endpoint override they talk to a local
//! stand-in instead (the SQS and Step Functions endpoints of `sluice dev`,
//! or moto), which is how the conformance suite runs these very adapters
//! without AWS.
//!
//! # Layout
//!
//! - [`client`]: building an SQS or Step Functions client for AWS or for a local endpoint.
//! - `host_prefix` (feature `sfn`): a local endpoint's host kept for host-prefixed operations (StartSyncExecution).
//! - [`sqs_queue`]: [`SqsQueue`], the domain's `WorkQueue` port on SQS FIFO.
//! - [`sqs_delay_queue`]: [`SqsDelayQueue`], the `DelayQueue` port on an SQS standard queue.
//! - [`queue_calls`]: [`SqsQueueOf`], the SQS queue both adapters are, and the calls they make alike.
//! - `batch_send`: one `SendMessageBatch` with its failed entries retried.
//! - [`batch_retry`]: how a partly failed `SendMessageBatch` is retried.
//! - [`state_machine`] (feature `sfn`): [`StateMachineClient`], a state machine started through `aws-sdk-sfn`.
//! - [`error`]: the adapters' errors.
//! - [`secrets`]: [`SecretsReader`], secrets read from Secrets Manager.
//! - [`api_calls`]: the AWS calls each adapter makes, with the IAM action allowing each.

pub mod api_calls;
pub mod batch_retry;
mod batch_send;
pub mod client;
pub mod error;
#[cfg(feature = "sfn")]
mod host_prefix;
pub mod queue_calls;
#[cfg(feature = "secrets")]
pub mod secrets;
pub mod sqs_delay_queue;
pub mod sqs_queue;
#[cfg(feature = "sfn")]
pub mod state_machine;

pub use api_calls::{ApiCall, AwsUse, Resource};
pub use batch_retry::BatchRetry;
#[cfg(feature = "sfn")]
pub use client::sfn_client;
pub use client::{ServiceEndpoint, SfnEndpoint, SqsEndpoint, sqs_client};
#[cfg(feature = "sfn")]
pub use error::SfnError;
pub use error::SqsError;
pub use queue_calls::{Fifo, SqsQueueOf, Standard};
#[cfg(feature = "secrets")]
pub use secrets::{SecretsError, SecretsReader};
pub use sqs_delay_queue::SqsDelayQueue;
pub use sqs_queue::SqsQueue;
#[cfg(feature = "sfn")]
pub use state_machine::{StateMachineClient, SyncExecution, SyncOutcome};
