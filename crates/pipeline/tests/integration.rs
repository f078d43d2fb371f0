//! The crate's integration tests as one binary, a module per file: a binary
//! per file linked the whole dependency tree again, most of what
//! `make test` spent building.

mod sheet_support;

mod mall_release;
mod sheet_credential;
mod sheet_edits;
mod sheet_edits_seeded;
mod sheet_flush;
mod sheet_formulas;
mod sheet_overflow;
mod steps;
