//! sluice's AWS adapters. For now: the work queue on SQS FIFO.
//!
//! The adapter talks to SQS through `aws-sdk-sqs`. With an endpoint
//! override it talks to a local stand-in instead (the SQS endpoint of
//! `sluice dev`, or moto), which is how the conformance suite runs this
//! very adapter without AWS.
//!
//! # Layout
//!
//! - [`client`]: building an SQS client for AWS or for a local endpoint.
//! - [`sqs_queue`]: [`SqsQueue`], the domain's `WorkQueue` port on SQS FIFO.
//! - [`batch_retry`]: how a partly failed `SendMessageBatch` is retried.
//! - [`error`]: the adapter's errors.

pub mod batch_retry;
pub mod client;
pub mod error;
pub mod sqs_queue;

pub use batch_retry::BatchRetry;
pub use client::{SqsEndpoint, sqs_client};
pub use error::SqsError;
pub use sqs_queue::SqsQueue;
