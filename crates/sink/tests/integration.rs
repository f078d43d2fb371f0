//! The crate's integration tests as one binary, a module per file: a binary
//! per file linked the whole dependency tree again, most of what
//! `make test` spent building.

mod support;

mod drain;
mod event_log;
mod failures;
mod tls;
