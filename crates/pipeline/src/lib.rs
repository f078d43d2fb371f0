//! sluice's pipeline steps: plain typed async functions, called by the
//! state machine `statemachine/pipeline.asl.json` through Lambda in AWS
//! (`functions/*`) and through the local interpreter in `sluice dev`.
//! Their JSON is [`step_io`] and [`sheet_io`].
//!
//! Per pipe batch, [`ServiceCore::plan_batch`] splits the batch into FIFO
//! groups (one pipe reads the whole queue, so shop and sheet items mix);
//! a failing item of either kind goes through
//! [`ServiceCore::record_failure`], and it and every later item of its
//! group are reported in `batchItemFailures`. The shop path
//! ([`ShopService`]), for each item of a group, in order:
//! [`ShopService::fetch`] within the mall's bucket (after
//! [`ShopService::ensure_token`] when the fetch finds the mall's token
//! missing, about to expire or refused), [`ShopService::store`] (the
//! fetched body goes from one to the other through Redis, by key: see
//! [`step_io`]). The sheet path ([`SheetService`]):
//! [`SheetService::buffer_row`] puts a row in its sheet's Redis buffer and
//! asks for the sheet's flush (a delayed message on the flush queue);
//! [`SheetService::flush_sheet`] appends the buffered rows to Google
//! Sheets, many per call, exactly once, within the quotas.
//!
//! # Layout
//!
//! - [`config`]: the settings.
//! - [`service_core`]: [`ServiceCore`], the settings, Redis primitives, traces and counts both services share; each service holds it as its `core` field.
//! - `plan_step`, `failure_step`: the core's steps, which serve both paths.
//! - [`shop_service`]: [`ShopService`], the shop path's service.
//! - `token_step`, `fetch_step`, `store_step`: the shop path, one step each (the fetch step's own part: its checks before the fetch).
//! - `upstream_fetch`: the one Cafe24 fetch path (bucket, hand-over, coalesced events, the call, what each answer leads to) that the fetch step, the catch-up runs and the release share; `upstream_fetch/budget.rs` takes an item's budget, `upstream_fetch/call.rs` makes the call.
//! - `mall_park`: a mall whose Cafe24 token is refused: its events held in order, one alert, `sluice tokens set`.
//! - [`catch_up`]: flow control's per-catch-up run; `mall_release`: its release of a parked mall's held events.
//! - [`step_io`]: the steps' inputs and outputs (the contract with the definition).
//! - [`json_task`]: [`call_json`], a step called with JSON, as Lambda and the local interpreter call it.
//! - [`sheet_service`]: [`SheetService`], the sheet path's service (it cannot be built without a flush trigger).
//! - [`sheet_io`]: the sheet path's inputs and outputs.
//! - `buffer_step`: a row into its sheet's buffer.
//! - `flush_request`: asking for a sheet's flush at most once at a time.
//! - [`flush_trigger`]: how that request is delivered (a delayed message).
//! - `flush_step`: the flush run (lock, quotas, adaptive batching).
//! - `sheet_append`: one batch's append.
//! - `sheet_settle`: a batch's end (settle, fail, park) and the check of an uncertain append.
//! - `sheet_resent`: rows sent again, looked for once more in case their first append landed late.
//! - [`google_token`]: a credential's access token and `sluice credentials set`.
//! - [`step_metrics`]: the counts the functions report as EMF.
//! - [`alerts`]: Slack-compatible alerts, one per key per window, or one at each end of an episode.
//! - [`suggested_command`]: the commands sluice suggests, each word shell-quoted.
//! - [`status_report`]: [`StatusReader`], what `sluice status` reads about a mall or a credential.

pub mod alerts;
mod buffer_step;
pub mod catch_up;
pub mod config;
mod failure_step;
mod fetch_step;
mod flush_request;
mod flush_step;
pub mod flush_trigger;
pub mod google_token;
pub mod json_task;
mod mall_park;
mod mall_release;
mod plan_step;
pub mod service_core;
mod sheet_append;
pub mod sheet_io;
mod sheet_resent;
pub mod sheet_service;
mod sheet_settle;
pub mod shop_service;
pub mod status_report;
pub mod step_io;
pub mod step_metrics;
mod store_step;
pub mod suggested_command;
mod token_step;
mod upstream_fetch;

pub use catch_up::{CatchUpOutput, CatchUpService, NextRun};
pub use config::{CatchUpConfig, PipelineConfig, SheetConfig};
pub use json_task::call_json;
pub use service_core::ServiceCore;
pub use sheet_service::SheetService;
pub use shop_service::ShopService;
pub use status_report::StatusReader;
pub use token_step::{fingerprint, stored_token};
