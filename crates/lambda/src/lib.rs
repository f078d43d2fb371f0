//! What every step Lambda's `bootstrap` shares, so that a function's
//! `main` is one call of [`serve_step`] with its steps and its handler,
//! and its handler reports failures as [`StepFailure`].
//!
//! # Layout
//!
//! - `serve`: [`serve_step`], the cold start and the invocation loop.
//! - `failure`: [`StepFailure`], a step's error as the report Step Functions matches.
//! - `flush_queue`: [`steps_with_flush_queue`], the steps that ask for flushes.

mod failure;
mod flush_queue;
mod serve;

pub use failure::StepFailure;
pub use flush_queue::steps_with_flush_queue;
pub use serve::serve_step;
