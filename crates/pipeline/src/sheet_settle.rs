//! How a flush's batch ends: found or written (settled), or failed (kept
//! for a retry, or parked for a person), and the verify that tells which
//! rows of an uncertain batch are already in the sheet.
//!
//! Parking never loses the "may have been applied" mark: rows whose append
//! may have landed stay in flight, marked unknown, however long the
//! credential or sheet stays broken, so the flush after the repair still
//! looks for them first. Only rows known unsent move to the parked list.
//! A rejected credential blocks every sheet it writes (the flush checks it
//! first); a parked sheet blocks itself (its parked rows must go first, to
//! keep arrival order).
//!
//! A credential is rejected only while the token store still holds the
//! refresh token the refused call was made with. A person may run `sluice
//! credentials set` while a flush's call with the old token is in the air:
//! the set clears the rejection and redrives, but its ask for this sheet's
//! flush goes unheard (this flush holds the sheet's gate). Rejecting then
//! would mark the new credential rejected and end the run parked, and the
//! rows would wait for a redrive nobody asks for; instead the flush asks
//! for itself again at once, to go on with the new credential.
//!
//! A flush put off by Google's 5xx, 429 or a timeout is a delay, not a
//! park: `delayed_flushes_alert_after` of them in a row raise one alert,
//! and the next append (or verify that finds the rows) another
//! (`sluice_redis::episode`, one episode per sheet).

use crate::alerts::EPISODE_TTL;
use crate::flush_step::{Next, RunTally, Spend};
use crate::google_token::{CredentialRead, TokenProblem};
use crate::sheet_append::{Failure, cell_text, classify, found_ids, missing_rows, trace_ids};
use crate::sheet_io::{BufferedRow, FlushRequest};
use crate::sheet_service::SheetService;
use crate::step_metrics::StepMetrics;
use crate::suggested_command::command;
use redis::aio::ConnectionLike;
use serde_json::json;
use sluice_cafe24::Secret;
use sluice_domain::{StepError, row_trace_id};
use sluice_redis::{EpisodeChange, EpisodeRule, Tag};
use sluice_sheets::a1::{CellRange, CellRef};
use sluice_sheets::{Outcome, SheetsClient};
use std::time::{Duration, Instant};

impl<C: ConnectionLike + Clone + Send + Sync> SheetService<C> {
    /// The in-flight rows are in the sheet: drop them and say so.
    pub(crate) async fn settle(
        &self,
        request: &FlushRequest,
        sheet: &Tag,
        rows: &[BufferedRow],
        tail: Option<u32>,
        tally: &mut RunTally,
    ) -> Result<(), StepError> {
        self.buffers.complete(sheet).await?;
        // Nothing of this sheet's is in the air any more.
        let _ = self.sheet_state.clear_landing(sheet).await;
        if let Some(tail) = tail {
            self.sheet_state.set_tail(sheet, tail).await?;
        }
        let _ = self.sheet_state.clear_failures(sheet).await;
        self.note_flush(request, sheet, false).await;
        let written_now = tail.is_some();
        if written_now {
            tally.appended_rows += rows.len() as u64;
            StepMetrics::add(&self.core.metrics.rows_appended, rows.len() as u64);
        }
        let detail =
            json!({"sheet": request.sheet, "rows": rows.len(), "last_row": tail, "found_by_verify": !written_now});
        self.core.trace_all(&trace_ids(request, rows), "COMPLETED", &detail).await;
        Ok(())
    }

    /// Acts on a failed call about rows in flight. `maybe_applied` is true
    /// when the rows' append may have landed (a verify failed); `read` is
    /// the stored credential the call was made with.
    pub(crate) async fn fail(
        &self,
        request: &FlushRequest,
        sheet: &Tag,
        rows: &[BufferedRow],
        failure: Failure,
        maybe_applied: bool,
        read: &CredentialRead,
    ) -> Result<Option<Next>, StepError> {
        match failure {
            Failure::RetryUnsent(wait) => {
                if !maybe_applied {
                    self.buffers.mark_unsent(sheet).await?;
                }
                self.note_flush(request, sheet, true).await;
                Ok(Some(Next::Later(wait.max(self.backoff(sheet).await))))
            }
            Failure::RetryUnknown(wait) => {
                self.note_flush(request, sheet, true).await;
                Ok(Some(Next::Later(wait.max(self.backoff(sheet).await))))
            }
            Failure::Refresh => {
                let why = "Google keeps refusing the access token (401)".to_owned();
                Box::pin(self.fail(request, sheet, rows, Failure::ParkCredential(why), maybe_applied, read)).await
            }
            Failure::ParkCredential(why) => {
                if !maybe_applied {
                    self.buffers.mark_unsent(sheet).await?;
                }
                let read = read.as_ref().map(|refresh| refresh.expose());
                if !self.credentials.reject(&request.credential_id, &why, read).await? {
                    // Refused with a credential replaced since (see the
                    // module doc): not a park, nor a delay by Google.
                    tracing::info!(
                        sheet = request.sheet,
                        credential = request.credential_id,
                        "credential refused was replaced meanwhile: flushing again with the new one"
                    );
                    return Ok(Some(Next::Later(Duration::ZERO)));
                }
                self.parked_traces(request, rows, "credential", &why).await;
                let text = format!(
                    "sluice: Google credential `{}` was rejected ({why}). Rows for its sheets are held, in order, and \
                     go out as soon as it is updated with `{} …`.",
                    request.credential_id,
                    command(&["sluice", "credentials", "set", &request.credential_id])
                );
                self.alerter.alert(&format!("credential:{}", request.credential_id), &text).await;
                Ok(Some(Next::Parked(format!("credential: {why}"))))
            }
            Failure::ParkSheet(why) => {
                let text = format!(
                    "sluice: spreadsheet `{}` sheet {} cannot be written ({why}). Its rows are held, in order; once \
                     the sheet is fixed, `{}` sends them.",
                    request.spreadsheet_id,
                    request.sheet_gid,
                    command(&["sluice", "credentials", "redrive", &request.credential_id])
                );
                self.alerter.alert(&format!("sheet:{}", request.sheet), &text).await;
                if maybe_applied {
                    // Cannot look for them now: keep them in flight, unknown.
                    return Ok(Some(Next::Later(self.backoff(sheet).await)));
                }
                self.buffers.park(sheet).await?;
                self.parked_traces(request, rows, "sheet", &why).await;
                Ok(Some(Next::Parked(format!("sheet: {why}"))))
            }
        }
    }

    /// A flush of `sheet` delayed by Google (`delayed`) or settled: one
    /// alert when `delayed_flushes_alert_after` delays came in a row, one
    /// at the next settle. Never fails the flush.
    pub(crate) async fn note_flush(&self, request: &FlushRequest, sheet: &Tag, delayed: bool) {
        let threshold = self.core.config.sheets.delayed_flushes_alert_after;
        let rule = EpisodeRule { name: "flush", threshold, ttl: EPISODE_TTL };
        let noted = match delayed {
            true => self.core.episodes.failed(sheet, &rule).await,
            false => self.core.episodes.succeeded(sheet, &rule).await,
        };
        let (spreadsheet, gid) = (&request.spreadsheet_id, request.sheet_gid);
        let text = match noted {
            Ok(EpisodeChange::Started) => format!(
                "sluice: spreadsheet `{spreadsheet}` sheet {gid}'s flushes were delayed {threshold} times in a row \
                 by Google (5xx, 429 or timeouts). Its rows wait in order and are retried with backoff."
            ),
            Ok(EpisodeChange::Ended) => {
                format!("sluice: spreadsheet `{spreadsheet}` sheet {gid} is written again: its rows are going out.")
            }
            Ok(EpisodeChange::None) => return,
            Err(e) => {
                tracing::warn!(sheet = request.sheet, error = %e, "delayed flushes not counted for alerts");
                return;
            }
        };
        self.alerter.episode(&format!("sheet:{}:delayed", request.sheet), &text).await;
    }

    async fn parked_traces(&self, request: &FlushRequest, rows: &[BufferedRow], reason: &str, why: &str) {
        let detail = json!({"sheet": request.sheet, "reason": reason, "why": why});
        self.core.trace_all(&trace_ids(request, rows), "PARKED", &detail).await;
    }

    /// Which of `rows` (whose append may have landed) are not in the sheet:
    /// reads the whole of column A, so rows are found wherever people have
    /// moved them (deletes and inserts above them, sorts). A row id found
    /// more than once is reported (`report_duplicates`). `Err(next)` ends
    /// the run with the rows still in flight, unknown.
    pub(crate) async fn verify(
        &self,
        request: &FlushRequest,
        sheet: &Tag,
        rows: &[BufferedRow],
        started: Instant,
        tally: &mut RunTally,
    ) -> Result<Result<Vec<BufferedRow>, Next>, StepError> {
        if let Some(next) = self.admit(request, Spend::Read, started).await? {
            return Ok(Err(next));
        }
        let client = self.sheets_client()?;
        let mut force = false;
        loop {
            let token = match self.google_token(&request.credential_id, force).await {
                Ok(token) => token,
                Err(TokenProblem::Rejected { why, read }) => {
                    let next = self.fail(request, sheet, rows, Failure::ParkCredential(why), true, &read).await?;
                    return Ok(Err(next.unwrap_or(Next::Idle)));
                }
                Err(TokenProblem::Unavailable(_)) => {
                    return Ok(Err(Next::Later(self.backoff(sheet).await)));
                }
            };
            match self.column_a(client, &token.access, request, tally).await {
                Outcome::Ok(cells) => {
                    let cells: Vec<_> = cells.iter().collect();
                    let ids: Vec<String> = rows.iter().map(|row| row.row_id.clone()).collect();
                    self.report_duplicates(request, &duplicated_ids(&ids, &cells)).await;
                    return Ok(Ok(missing_rows(rows, &found_ids(cells))));
                }
                other => match classify(other) {
                    Failure::Refresh if !force => force = true,
                    failure => {
                        let next = self.fail(request, sheet, rows, failure, true, &token.read).await?;
                        return Ok(Err(next.unwrap_or(Next::Idle)));
                    }
                },
            }
        }
    }

    /// Column A's cells, one counted read of the whole column (`A1:A`):
    /// where sluice looks for its row ids, wherever people have moved them.
    pub(crate) async fn column_a(
        &self,
        client: &SheetsClient,
        token: &Secret,
        request: &FlushRequest,
        tally: &mut RunTally,
    ) -> Outcome<Vec<serde_json::Value>> {
        tally.calls += 1;
        StepMetrics::add(&self.core.metrics.sheets_calls, 1);
        let column_a = CellRange { start: CellRef::cell(1, 1), end: CellRef { column: Some(1), row: None } };
        let read = client.get(token, &request.spreadsheet_id, request.sheet_gid, Some(column_a)).await;
        read.map(|range| range.values.into_iter().filter_map(|row| row.into_iter().next()).collect())
    }

    /// Rows of a batch found in the sheet while others of it are sent
    /// again: each ends with its own outcome.
    pub(crate) async fn found_traces(&self, request: &FlushRequest, rows: &[BufferedRow], missing: &[BufferedRow]) {
        let found: Vec<BufferedRow> =
            rows.iter().filter(|row| !missing.iter().any(|m| m.row_id == row.row_id)).cloned().collect();
        let detail = json!({"sheet": request.sheet, "rows": found.len(), "found_by_verify": true});
        self.core.trace_all(&trace_ids(request, &found), "COMPLETED", &detail).await;
    }

    /// Row ids sluice wrote more than once (an append applied by Google
    /// past the apply horizon, after its rows were sent again): said in
    /// each row's trace, counted, and alerted once per sheet per window.
    pub(crate) async fn report_duplicates(&self, request: &FlushRequest, duplicated: &[(String, usize)]) {
        if duplicated.is_empty() {
            return;
        }
        StepMetrics::add(&self.core.metrics.rows_duplicated, duplicated.len() as u64);
        let sheet = Tag::for_sheet(&request.sheet);
        if let Err(e) = self.sheet_state.note_duplicated(&sheet, duplicated.len() as u64).await {
            tracing::warn!(sheet = request.sheet, error = %e, "duplicates not counted for sluice status");
        }
        for (row_id, times) in duplicated {
            let detail = json!({"sheet": request.sheet, "times_in_sheet": times});
            self.core.trace(&row_trace_id(&request.credential_id, row_id), "DUPLICATED", detail).await;
        }
        let ids: Vec<&str> = duplicated.iter().map(|(id, _)| id.as_str()).take(10).collect();
        let text = format!(
            "sluice: spreadsheet `{}` sheet {} holds {} of sluice's rows more than once ({}): an append Google \
             applied later than sluice waited for. Delete the extra copies; `sluice trace ROW_ID` shows each.",
            request.spreadsheet_id,
            request.sheet_gid,
            duplicated.len(),
            ids.join(", ")
        );
        self.alerter.alert(&format!("sheet:{}:duplicated", request.sheet), &text).await;
    }
}

/// Which of `ids` column A's `cells` hold more than once, with how many
/// times (a cell counts for an id with or without a kept apostrophe).
pub(crate) fn duplicated_ids(ids: &[String], cells: &[&serde_json::Value]) -> Vec<(String, usize)> {
    let mut counts: std::collections::HashMap<&str, usize> = ids.iter().map(|id| (id.as_str(), 0)).collect();
    for text in cells.iter().filter_map(|cell| cell_text(cell)) {
        let unquoted = text.strip_prefix('\'');
        for id in [Some(text.as_str()), unquoted].into_iter().flatten() {
            if let Some(count) = counts.get_mut(id) {
                *count += 1;
                break;
            }
        }
    }
    let mut duplicated: Vec<(String, usize)> =
        counts.into_iter().filter(|(_, n)| *n > 1).map(|(id, n)| (id.to_owned(), n)).collect();
    duplicated.sort();
    duplicated
}
