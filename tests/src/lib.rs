//! Repository-wide checks and end-to-end tests; see `tests/`. The checks
//! of `infra/template.yaml` against the code are functions here that
//! return the problems they find, one line each, so a test runs each on
//! the template and on copies broken on purpose.
//!
//! # Layout
//!
//! - [`template`]: reading the template as text (blocks, environments, flow mappings).
//! - [`variables`]: each function's environment against what its code reads.
//! - [`iam`]: each function's AWS calls (its crate's `AWS_CALLS`) against its IAM policies.
//! - [`metric_references`]: the metrics the alarms and the dashboard name.
//! - [`metrics`]: those metrics against what the code's EMF lines and AWS publish.

pub mod iam;
pub mod metric_references;
pub mod metrics;
pub mod template;
pub mod variables;
