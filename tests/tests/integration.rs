//! The crate's integration tests as one binary, a module per file: a binary
//! per file linked the whole dependency tree again, most of what
//! `make test` spent building.

mod architecture_doc;
mod asl_choice_values;
mod asl_error_names;
mod front_page;
mod local_dependencies;
mod template_deploy;
mod template_iam;
mod template_metrics;
mod template_variables;
mod template_wiring;
mod untested_targets;
