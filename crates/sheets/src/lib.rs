//! sluice's Google Sheets API v4 client: resolve a sheet's title from its
//! gid, append rows, read and write values, refresh OAuth access tokens.
//! Every call ends in an [`Outcome`] whose error kind the state machine
//! matches; a write that may have been applied without saying so is
//! [`Outcome::OutcomeUnknown`], never a plain failure.
//!
//! Secrets (access and refresh tokens, the client secret) are [`Secret`]s:
//! redacted in `Debug`, never part of an outcome or error message.
//!
//! # Layout
//!
//! - [`client`]: [`SheetsClient`]: `sheet_title`, `append`, `get`, `update`, `refresh`.
//! - `classify`: one HTTP exchange → [`Outcome`].
//! - `titles`: the per-spreadsheet gid → title cache.
//! - [`config`]: endpoints, OAuth client, timeouts.
//! - [`a1`]: A1 notation (ranges, titles, column letters).
//! - [`values`]: the Sheets JSON shapes (`ValueRange`, append/update answers, spreadsheet metadata).
//! - [`error_body`]: Google's error JSON and quota details.
//! - [`outcome`]: the typed outcome of one call and its error kind.
//! - [`token`]: the OAuth2 token endpoint (refresh grant).

pub mod a1;
mod classify;
pub mod client;
pub mod config;
pub mod error_body;
pub mod outcome;
mod titles;
pub mod token;
pub mod values;

pub use a1::{A1Error, A1Range, CellRange, CellRef};
pub use client::SheetsClient;
pub use config::{ConfigError, PRODUCTION_API_BASE_URL, PRODUCTION_TOKEN_URL, SheetsConfig};
pub use error_body::{GoogleError, Quota, QuotaViolation};
pub use outcome::{Missing, Outcome, Unavailable};
pub use sluice_domain::Secret;
pub use token::{AccessGrant, RefreshError, TokenResponse};
pub use values::{
    AppendValuesResponse, InsertDataOption, Sheet, SheetProperties, Spreadsheet, UpdateValuesResponse,
    ValueInputOption, ValueRange, ValueRenderOption,
};
