//! The crate's integration tests as one binary, a module per file: a binary
//! per file linked the whole dependency tree again, most of what
//! `make test` spent building.

mod support;

mod abuse;
mod asl_cli;
mod cli;
mod closed_stdout;
mod cluster_failover;
mod crash_restart;
mod db_cli;
mod dev;
mod dev_processes;
mod dev_restart;
mod dev_shop;
mod dlq_cli;
mod event_log_cli;
mod load_held;
mod redis_restart;
mod redrive_cli;
mod sandbox_cli;
mod sheet_crash;
mod sheets_cli;
mod status_cli;
mod tokens_cli;
mod upstream_faults;
