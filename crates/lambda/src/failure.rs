//! A step's error as Lambda reports it. Step Functions makes a function's
//! `errorType` the task's `Error`, the name the states' `Retry` and `Catch`
//! match: so the type is the kind's name (`Sluice.InvalidRequest`, …) and
//! the message the cause, never the Rust type name the runtime would use.

use lambda_runtime::Diagnostic;
use sluice_domain::StepError;

/// A [`StepError`] on its way out of a handler. Both `StepError` and
/// `Diagnostic` belong to other crates, so the orphan rule allows the one
/// conversion only on a type of this crate: this wrapper.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct StepFailure(#[from] pub StepError);

impl From<StepFailure> for Diagnostic {
    fn from(StepFailure(e): StepFailure) -> Self {
        Diagnostic { error_type: e.kind.name().to_owned(), error_message: e.cause }
    }
}
