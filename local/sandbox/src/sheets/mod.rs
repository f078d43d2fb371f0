//! A Google Sheets stand-in: the Sheets API v4 calls sluice makes
//! (`spreadsheets.get`, `values.get`, `values.append`, `values.update`) at
//! Google's paths, Google's OAuth token endpoint (refresh grant), the four
//! per-minute request quotas enforced exactly over a sliding window,
//! Google's error bodies, fault injection, and a record of every call.
//!
//! Start one with [`SheetsSandbox::start`], add a client (the project) and
//! users (each gets a refresh token) and spreadsheets, point a Sheets
//! client at [`SheetsSandbox::base_url`] and [`SheetsSandbox::token_url`];
//! drive it with the methods here or over HTTP under `/sandbox/sheets/…`
//! (see [`control`]); inspect it with [`SheetsSandbox::calls`] and
//! [`SheetsSandbox::sheet_values`]. Edit a sheet as a person would
//! ([`SheetsSandbox::delete_rows`], [`SheetsSandbox::insert_rows`],
//! [`SheetsSandbox::sort_rows`]) between a client's calls, and hold a write
//! to apply it after its client gave up ([`SheetsFault::AppliedLate`],
//! [`SheetsSandbox::release_late`], [`SheetsSandbox::wait_late`]).
//!
//! # Layout
//!
//! - `mod.rs`: [`SheetsSandbox`], the handle, and [`SandboxError`].
//! - [`config`]: the sandbox's settings, [`SheetsSandboxConfig`].
//! - `state`: the shared state behind one mutex.
//! - `a1`: A1 range notation, read and written as Google does.
//! - `cells`: `valueInputOption` in, `valueRenderOption` out.
//! - `grid`: spreadsheets, sheets and cells; append/get/update semantics;
//!   `grid::edits`, rows and columns deleted, inserted, sorted.
//! - `oauth`: clients, refresh tokens, access tokens and their expiry.
//! - `quota`: the sliding per-user and per-project read/write windows.
//! - `faults`: the queued one-shot [`SheetsFault`]s.
//! - `late`: writes an `AppliedLate` fault holds, and [`LateCalls`].
//! - [`record`]: [`SheetsCall`], the call record.
//! - `answer`: Google's error bodies.
//! - `api`: the Sheets API handlers and the order a call is checked in.
//! - `batch_update`: `spreadsheets.batchUpdate` (delete, insert, sort).
//! - `token_endpoint`: `POST /token`.
//! - [`control`]: the JSON control plane.

mod a1;
mod answer;
mod api;
mod batch_update;
mod cells;
pub mod config;
pub mod control;
mod faults;
mod grid;
mod late;
mod oauth;
mod quota;
pub mod record;
mod state;
mod token_endpoint;

pub use cells::formula_of;
pub use config::SheetsSandboxConfig;
pub use faults::SheetsFault;
pub use late::LateCalls;
pub use record::{RecordedFault, SheetsCall, SheetsOp};

use crate::fault::FaultConfig;
use crate::server::Server;
use serde_json::Value;
use state::Shared;
use std::net::SocketAddr;
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Why a Sheets sandbox operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SandboxError {
    #[error("no spreadsheet `{0}` in the sandbox")]
    UnknownSpreadsheet(String),
    #[error("spreadsheet `{spreadsheet_id}` has no sheet with gid {gid}")]
    UnknownSheet { spreadsheet_id: String, gid: u64 },
    #[error("invalid input: {0}")]
    InvalidInput(String),
    #[error("{0}")]
    Io(String),
}

/// A running Sheets sandbox. Clones are handles to the same sandbox; the
/// server stops when [`SheetsSandbox::stop`] is called or the last handle
/// is dropped.
#[derive(Debug, Clone)]
pub struct SheetsSandbox {
    shared: Arc<Shared>,
    server: Arc<Mutex<Option<Server>>>,
    addr: SocketAddr,
}

impl SheetsSandbox {
    /// Binds `config.addr` (port 0: a free port) and serves until stopped.
    pub async fn start(config: SheetsSandboxConfig) -> Result<Self, SandboxError> {
        let shared = Arc::new(Shared::new(&config)?);
        let router = api::router()
            .merge(token_endpoint::router())
            .merge(control::router())
            .fallback(api::not_found)
            .with_state(shared.clone());
        let server = Server::bind(config.addr, router).await.map_err(SandboxError::Io)?;
        Ok(Self { shared, addr: server.addr(), server: Arc::new(Mutex::new(Some(server))) })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`, the API base: paths are `/v4/…`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The OAuth token endpoint, `base_url + "/token"`.
    pub fn token_url(&self) -> String {
        format!("{}/token", self.base_url())
    }

    /// Adds an OAuth client, which is also the project the quotas count
    /// per; adding it again changes its secret.
    pub fn add_client(&self, client_id: &str, client_secret: &str) {
        self.shared.lock().oauth.add_client(client_id, client_secret);
    }

    /// A new refresh token for `user`'s grant to `client_id` (earlier ones
    /// stay valid until revoked). It refreshes only with that client's
    /// credentials.
    pub fn add_user(&self, client_id: &str, user: &str) -> String {
        self.shared.lock().oauth.issue_refresh(client_id, user)
    }

    /// Creates a spreadsheet with sheets `(gid, title)` in tab order,
    /// replacing one with the same id. Every user may use it until
    /// [`SheetsSandbox::deny_access`].
    ///
    /// # Panics
    /// If a gid or title repeats, a title is empty, or the id is empty or
    /// has a `/` (a mistake in the test's setup).
    pub fn create_spreadsheet(&self, spreadsheet_id: &str, sheets: &[(u64, &str)]) {
        let created = self.shared.lock().create_spreadsheet(spreadsheet_id, sheets);
        created.unwrap_or_else(|e| panic!("create_spreadsheet: {e}"));
    }

    /// From now on `user` gets 403 `PERMISSION_DENIED` for the spreadsheet.
    ///
    /// # Panics
    /// If the spreadsheet does not exist.
    pub fn deny_access(&self, spreadsheet_id: &str, user: &str) {
        let mut inner = self.shared.lock();
        let spreadsheet = inner.spreadsheet_mut(spreadsheet_id).unwrap_or_else(|e| panic!("deny_access: {e}"));
        spreadsheet.denied.insert(user.to_owned());
    }

    /// Deletes a sheet: ranges naming its title get 400 "Unable to parse
    /// range" from now on.
    ///
    /// # Panics
    /// If the spreadsheet or the sheet does not exist.
    pub fn delete_sheet(&self, spreadsheet_id: &str, gid: u64) {
        let deleted = self.shared.lock().delete_sheet(spreadsheet_id, gid);
        deleted.unwrap_or_else(|e| panic!("delete_sheet: {e}"));
    }

    /// Renames a sheet, as a user editing the spreadsheet might: ranges
    /// with the old title get 400 from now on.
    pub fn rename_sheet(&self, spreadsheet_id: &str, gid: u64, title: &str) -> Result<(), SandboxError> {
        self.shared.lock().rename_sheet(spreadsheet_id, gid, title)
    }

    /// Deletes rows `rows` of sheet `gid` (0-based, end exclusive: `1..3`
    /// is what a person calls rows 2 and 3): the rows below move up and the
    /// grid shrinks, so the next append lands after the data as it now is.
    ///
    /// This acts as a person in the sheet, not as an API call: no quota
    /// spent, no fault drawn, nothing in [`SheetsSandbox::calls`]. (The API
    /// call is `deleteDimension` in `POST …:batchUpdate`.) Refused as
    /// Google refuses it: rows past the grid, or every row.
    pub fn delete_rows(&self, spreadsheet_id: &str, gid: u64, rows: Range<u32>) -> Result<(), SandboxError> {
        self.shared.lock().delete_rows(spreadsheet_id, gid, rows)
    }

    /// Inserts `rows.len()` blank rows at `rows.start` (0-based): the row
    /// there and those below move down, and the grid grows. `rows.start`
    /// may be the grid's row count, to add rows at the bottom.
    ///
    /// Acts as a person in the sheet: no quota, no fault, not recorded as
    /// an API call (that is `insertDimension` over batchUpdate).
    pub fn insert_rows(&self, spreadsheet_id: &str, gid: u64, rows: Range<u32>) -> Result<(), SandboxError> {
        self.shared.lock().insert_rows(spreadsheet_id, gid, rows)
    }

    /// Types `values` into the rows below the sheet's data, as a person
    /// adding their own rows (each cell as typed text or number, `RAW`).
    ///
    /// Acts as a person in the sheet: no quota, no fault, not recorded.
    pub fn type_rows(&self, spreadsheet_id: &str, gid: u64, values: &[Vec<Value>]) -> Result<(), SandboxError> {
        self.shared.lock().type_rows(spreadsheet_id, gid, values)
    }

    /// Sorts rows `rows` (0-based, end exclusive; leave a header out) by
    /// `column` (0 is `A`), as a person selecting those rows and sorting
    /// them: whole rows move, other rows stay, empty cells sort last,
    /// equal ones keep their order (see `grid::edits` for the order).
    ///
    /// Acts as a person in the sheet: no quota, no fault, not recorded as
    /// an API call (that is `sortRange` over batchUpdate).
    pub fn sort_rows(
        &self,
        spreadsheet_id: &str,
        gid: u64,
        rows: Range<u32>,
        column: u32,
        descending: bool,
    ) -> Result<(), SandboxError> {
        self.shared.lock().sort_rows(spreadsheet_id, gid, rows, column, descending)
    }

    /// The whole sheet as held: typed values (`USER_ENTERED` numbers are
    /// numbers, formulas `{"formula": "=…"}`: see [`formula_of`]), `Null`
    /// for an empty cell inside the data, trailing empty rows and cells
    /// trimmed. `None` if there is no such sheet.
    pub fn sheet_values(&self, spreadsheet_id: &str, gid: u64) -> Option<Vec<Vec<Value>>> {
        self.shared.lock().sheet_values(spreadsheet_id, gid)
    }

    /// Every access token of `user` gets 401 from now on.
    pub fn expire_access_tokens(&self, user: &str) {
        self.shared.lock().oauth.expire_access(user, Instant::now());
    }

    /// Every refresh token of `user` gets 400 `invalid_grant` from now on,
    /// and the access tokens issued under them 401; `add_user` issues a
    /// new one.
    pub fn revoke_refresh_tokens(&self, user: &str) {
        self.shared.lock().oauth.revoke_refresh(user, Instant::now());
    }

    /// Queues a one-shot fault for the next matching call(s), after those
    /// already queued for the same operation.
    ///
    /// # Panics
    /// If the fault's status is not an error status (400–599).
    pub fn inject(&self, fault: SheetsFault) {
        fault.validate().unwrap_or_else(|e| panic!("inject: {e}"));
        self.shared.lock().queued.push(fault);
    }

    /// The calls held by [`SheetsFault::AppliedLate`] so far: how many
    /// arrived and how many have been applied.
    pub fn late_calls(&self) -> LateCalls {
        self.shared.lock().late.counts()
    }

    /// Applies now every held late call, oldest first, as if its time had
    /// come (each lands where it would land now, e.g. an append after rows
    /// added meanwhile); returns how many. Their answers leave once their
    /// hold has passed, if their clients are still there.
    pub fn release_late(&self) -> usize {
        self.shared.lock().apply_late(None)
    }

    /// Waits until `until` holds for the late calls' counts, and returns
    /// them: `|c| c.arrived >= 1` (the sandbox holds the call, unapplied),
    /// `|c| c.applied >= 1` (it has been applied). The counts only grow,
    /// so this cannot miss its moment. Bound it with a timeout in tests.
    pub async fn wait_late(&self, mut until: impl FnMut(&LateCalls) -> bool) -> LateCalls {
        let mut counts = self.shared.lock().late.subscribe();
        let reached = counts.wait_for(|c| until(c)).await.map(|c| *c);
        // The sender lives with the state, which `self` keeps alive.
        reached.unwrap_or_else(|_| self.late_calls())
    }

    /// Replaces the probabilistic fault plan (its RNG restarts from the
    /// new seed).
    pub fn set_faults(&self, faults: FaultConfig) -> Result<(), SandboxError> {
        self.shared.lock().faults.set(faults).map_err(SandboxError::InvalidInput)
    }

    /// Every call recorded, oldest first.
    pub fn calls(&self) -> Vec<SheetsCall> {
        self.shared.lock().log.since(0)
    }

    /// Calls recorded after the one numbered `seq`.
    pub fn calls_after(&self, seq: u64) -> Vec<SheetsCall> {
        self.shared.lock().log.since(seq)
    }

    /// The most writes counted against the quotas (of `user`, or of
    /// everyone) in any interval of length `window`, from the record.
    pub fn max_accepted_writes_in(&self, window: Duration, user: Option<&str>) -> usize {
        self.shared.lock().log.max_accepted_writes_in(window, user)
    }

    /// Now on the sandbox's clock, the scale of [`SheetsCall::at`].
    pub fn clock(&self) -> Duration {
        self.shared.since_epoch(Instant::now())
    }

    /// Stops serving, letting answers in flight finish briefly (held ones
    /// are cut off). Other handles see a stopped sandbox.
    pub async fn stop(self) {
        let server = self.server.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take();
        if let Some(server) = server {
            server.stop().await;
        }
    }
}
