//! The crate's integration tests as one binary, a module per file: a binary
//! per file linked the whole dependency tree again, most of what
//! `make test` spent building.

mod support;

mod api_gateway;
mod cold_starts;
mod invocations;
