//! What every step Lambda's `bootstrap` shares, so that a function's
//! `main` is one call of [`serve_step`] with its service and its handler,
//! and its handler reports failures as [`StepFailure`].
//!
//! # Layout
//!
//! - `serve`: [`serve_step`], the cold start and the invocation loop.
//! - `failure`: [`StepFailure`], a step's error as the report Step Functions matches.
//! - `flush_queue`: [`sheet_service_from_env`], the sheet service, asking for flushes on the flush queue.

mod failure;
mod flush_queue;
mod serve;

pub use failure::StepFailure;
pub use flush_queue::sheet_service_from_env;
pub use serve::serve_step;
