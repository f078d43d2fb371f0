//! The buffer step's Lambda: [`Steps::buffer_row`] behind `lambda_runtime`.
//! A sheet row joins its sheet's Redis buffer and the sheet's flush is
//! asked for on the flush queue. The `BufferRow` state of
//! `statemachine/pipeline.asl.json` invokes it through
//! `arn:aws:states:::lambda:invoke` as `${BufferRowFunction}`.
//!
//! `main` reads the environment and connects once per execution
//! environment (the variables are listed in `functions/README.md`, plus
//! `SLUICE_FLUSH_QUEUE_URL`), then answers every invocation with
//! [`handler`].

use lambda_runtime::{Diagnostic, LambdaEvent};
use redis::aio::ConnectionManager;
use serde_json::Value;
use sluice_pipeline::{Steps, call_json};

/// One invocation: the payload is a [`BufferInput`], the answer a
/// [`BufferOutput`]; a failure's error type is its kind's name, which the
/// state's Retry matches.
///
/// [`BufferInput`]: sluice_pipeline::sheet_io::BufferInput
/// [`BufferOutput`]: sluice_pipeline::sheet_io::BufferOutput
pub async fn handler(steps: &Steps<ConnectionManager>, event: LambdaEvent<Value>) -> Result<Value, Diagnostic> {
    call_json(event.payload, |input| steps.buffer_row(input))
        .await
        .map_err(|e| Diagnostic { error_type: e.kind.name().to_owned(), error_message: e.cause })
}
