//! The crate's integration tests as one binary, a module per file: a binary
//! per file linked the whole dependency tree again, most of what
//! `make test` spent building.

mod support;

mod acceptance;
mod back_pressure;
mod bad_input;
mod batching;
mod connections;
mod crash_points;
mod hostile_ids;
mod round_trips;
mod sheet_rows;
mod tenants;
mod undo;
