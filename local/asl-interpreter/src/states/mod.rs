//! The state types: each file parses its type's own fields and runs it.

pub(crate) mod choice;
mod choice_rule;
pub(crate) mod fail;
pub(crate) mod map;
pub(crate) mod parallel;
pub(crate) mod pass;
mod result_processing;
pub(crate) mod task;
mod task_call;
pub(crate) mod wait;
