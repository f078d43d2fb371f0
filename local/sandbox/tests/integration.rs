//! The crate's integration tests as one binary, a module per file: a binary
//! per file linked the whole dependency tree again, most of what
//! `make test` spent building.

mod sheets_support;

mod bucket;
mod control;
mod faults;
mod sheets_control;
mod sheets_edits;
mod sheets_faults;
mod sheets_late;
mod sheets_oauth;
mod sheets_quota;
mod sheets_values;
mod tokens;
mod upstream_episodes;
mod webhooks;
