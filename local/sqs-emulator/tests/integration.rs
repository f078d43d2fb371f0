//! The crate's integration tests as one binary, a module per file: a binary
//! per file linked the whole dependency tree again, most of what
//! `make test` spent building.

#[path = "conformance/main.rs"]
mod conformance;
mod consumer_lease;
mod group_scan;
mod lost_receive;
mod receive_attempt;
mod redis_store;
mod sqs_api;
mod sqs_api_standard;
mod standard_queue;
