//! The Sheets sandbox's state, shared by the HTTP handlers, the control
//! plane and the library handle.
//!
//! One mutex guards it all; every critical section is short and never
//! awaits (latency and holds happen after the lock is released). The
//! clock is read under the lock, so records are in time order and the
//! quotas see requests in the order they were decided.

use crate::fault::FaultInjector;
use crate::sheets::SandboxError;
use crate::sheets::config::SheetsSandboxConfig;
use crate::sheets::faults::FaultQueue;
use crate::sheets::grid::{Dimension, Sheet, SortKey, Span, Spreadsheet};
use crate::sheets::late::LateBook;
use crate::sheets::oauth::OAuthBook;
use crate::sheets::quota::QuotaBook;
use crate::sheets::record::{CallLog, RECORD_LIMIT};
use serde_json::Value;
use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Everything that changes.
#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) spreadsheets: BTreeMap<String, Spreadsheet>,
    pub(crate) oauth: OAuthBook,
    pub(crate) quotas: QuotaBook,
    pub(crate) queued: FaultQueue,
    pub(crate) faults: FaultInjector,
    pub(crate) log: CallLog,
    /// Writes held by `AppliedLate` faults, waiting to be applied.
    pub(crate) late: LateBook,
}

impl Inner {
    /// Creates a spreadsheet, replacing one with the same id.
    pub(crate) fn create_spreadsheet(&mut self, id: &str, sheets: &[(u64, &str)]) -> Result<(), SandboxError> {
        if id.is_empty() || id.contains('/') {
            return Err(SandboxError::InvalidInput(format!("`{id}` cannot be a spreadsheet id")));
        }
        let spreadsheet = Spreadsheet::new(sheets).map_err(SandboxError::InvalidInput)?;
        self.spreadsheets.insert(id.to_owned(), spreadsheet);
        Ok(())
    }

    pub(crate) fn spreadsheet_mut(&mut self, id: &str) -> Result<&mut Spreadsheet, SandboxError> {
        self.spreadsheets.get_mut(id).ok_or_else(|| SandboxError::UnknownSpreadsheet(id.to_owned()))
    }

    pub(crate) fn delete_sheet(&mut self, id: &str, gid: u64) -> Result<(), SandboxError> {
        let spreadsheet = self.spreadsheet_mut(id)?;
        let index = spreadsheet.sheets.iter().position(|s| s.gid == gid);
        let index = index.ok_or_else(|| SandboxError::UnknownSheet { spreadsheet_id: id.to_owned(), gid })?;
        spreadsheet.sheets.remove(index);
        Ok(())
    }

    pub(crate) fn rename_sheet(&mut self, id: &str, gid: u64, title: &str) -> Result<(), SandboxError> {
        let spreadsheet = self.spreadsheet_mut(id)?;
        if title.is_empty() || spreadsheet.sheets.iter().any(|s| s.title == title && s.gid != gid) {
            return Err(SandboxError::InvalidInput(format!("`{title}` cannot be a new title for sheet {gid}")));
        }
        let sheet = spreadsheet.sheets.iter_mut().find(|s| s.gid == gid);
        sheet.ok_or_else(|| SandboxError::UnknownSheet { spreadsheet_id: id.to_owned(), gid })?.title =
            title.to_owned();
        Ok(())
    }

    pub(crate) fn sheet_values(&self, id: &str, gid: u64) -> Option<Vec<Vec<Value>>> {
        Some(self.spreadsheets.get(id)?.sheet(gid)?.values())
    }

    // What a person does in the sheet (the handle's and the control
    // plane's `delete_rows`, `insert_rows`, `sort_rows`): the grid edits
    // batchUpdate makes, but not API calls, so no quota, fault or record.

    pub(crate) fn delete_rows(&mut self, id: &str, gid: u64, rows: Range<u32>) -> Result<(), SandboxError> {
        self.edit_sheet(id, gid, |sheet, _| sheet.delete_dimension(Dimension::Rows, rows.start, rows.end))
    }

    pub(crate) fn insert_rows(&mut self, id: &str, gid: u64, rows: Range<u32>) -> Result<(), SandboxError> {
        // A person inserts above the first row or below any row, the end
        // included; with no formatting kept, which neighbour the new rows
        // would take theirs from only decides what Google allows.
        let below = rows.start > 0;
        self.edit_sheet(id, gid, |sheet, cells| {
            sheet.insert_dimension(Dimension::Rows, rows.start, rows.end, below, cells)
        })
    }

    pub(crate) fn type_rows(&mut self, id: &str, gid: u64, values: &[Vec<Value>]) -> Result<(), SandboxError> {
        self.edit_sheet(id, gid, |sheet, _| sheet.type_below(values))
    }

    pub(crate) fn sort_rows(
        &mut self,
        id: &str,
        gid: u64,
        rows: Range<u32>,
        column: u32,
        descending: bool,
    ) -> Result<(), SandboxError> {
        let (rows, columns) = (Span { start: Some(rows.start), end: Some(rows.end) }, Span::default());
        let keys = [SortKey { column, descending }];
        self.edit_sheet(id, gid, |sheet, _| sheet.sort_range(rows, columns, &keys).map(drop))
    }

    /// Runs `edit` on a sheet, given the spreadsheet's grid cells.
    fn edit_sheet(
        &mut self,
        id: &str,
        gid: u64,
        edit: impl FnOnce(&mut Sheet, u64) -> Result<(), String>,
    ) -> Result<(), SandboxError> {
        let spreadsheet = self.spreadsheet_mut(id)?;
        let cells = spreadsheet.grid_cells();
        let sheet = spreadsheet.sheet_mut(gid);
        let sheet = sheet.ok_or_else(|| SandboxError::UnknownSheet { spreadsheet_id: id.to_owned(), gid })?;
        edit(sheet, cells).map_err(SandboxError::InvalidInput)
    }
}

/// State plus what never changes after start.
#[derive(Debug)]
pub(crate) struct Shared {
    /// The sandbox's clock starts here; records report time since it.
    pub(crate) epoch: Instant,
    pub(crate) project_number: u64,
    inner: Mutex<Inner>,
}

impl Shared {
    pub(crate) fn new(config: &SheetsSandboxConfig) -> Result<Self, SandboxError> {
        config.validate().map_err(SandboxError::InvalidInput)?;
        let inner = Inner {
            spreadsheets: BTreeMap::new(),
            oauth: OAuthBook::new(config.access_token_ttl),
            quotas: QuotaBook::new(config.clone()),
            queued: FaultQueue::default(),
            faults: FaultInjector::new(config.faults).map_err(SandboxError::InvalidInput)?,
            log: CallLog::new(RECORD_LIMIT),
            late: LateBook::default(),
        };
        Ok(Self { epoch: Instant::now(), project_number: config.project_number, inner: Mutex::new(inner) })
    }

    /// The state. A panic while it was held cannot leave it torn (every
    /// section is a few field updates), so a poisoned lock is taken over.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// `now` on the sandbox's clock.
    pub(crate) fn since_epoch(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.epoch)
    }
}
