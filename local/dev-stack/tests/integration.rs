//! The crate's integration tests as one binary, a module per file: a binary
//! per file linked the whole dependency tree again, most of what
//! `make test` spent building.

mod support;

mod dev_drain;
mod dev_queues;
mod flow_control;
mod noisy_neighbour;
mod noisy_sheet;
mod parked_mall;
mod process_pipeline;
#[path = "sfn_api/main.rs"]
mod sfn_api;
mod sheet_pipeline;
mod shop_pipeline;
mod stopping;
mod throttle_paths;
mod throttled_flood;
