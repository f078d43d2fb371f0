//! One claim of a flush: the rows go to the sheet, or are found already
//! there, or wait for later, or are parked, and always exactly once.
//!
//! Each row is written as `[row id, values…]`: **column A holds sluice's
//! row id**, so a flush can tell which rows are in the sheet. The header
//! row, written when the sheet is empty, is `["row_id", header…]`.
//!
//! No text from a request becomes a formula in the sheet (docs/security.md,
//! "Google Sheets: formulas"). Under `RAW`, the default, Sheets stores
//! every string as given, so everything is sent as it is. Under
//! `USER_ENTERED` the id is sent with a leading apostrophe, which Sheets
//! takes as "text" and does not keep, so an id like `007` or `=x` is held
//! as that text; and every value and header title that a spreadsheet would
//! read as a formula (`=…`, `+…`, `-…`, `@…`, a leading tab or carriage
//! return) gets one too. Either way column A holds the id exactly, and
//! [`found_ids`] reads it back.
//!
//! Rows whose append may have been applied (`Claim::Unknown`) are looked
//! for in the whole of column A, wherever people have moved them since
//! (deleted rows above them, sorted the sheet, inserted their own). Rows
//! not found are sent again only once no append of theirs can still land:
//! an append never answered (a timeout, a dropped connection, a flush
//! killed mid-call) may be applied by Google up to its 180 s processing
//! limit later, so the flush waits out `apply_horizon` from that call
//! (`SheetState::landing_for`) before it concludes they are missing. An
//! answered call (even a 5xx) is over: what it did is in the sheet.

use crate::flush_step::{Next, RunTally, Spend};
use crate::google_token::{GoogleToken, TokenProblem};
use crate::sheet_io::{BufferedRow, FlushRequest};
use crate::sheet_service::SheetService;
use crate::step_metrics::StepMetrics;
use redis::aio::ConnectionLike;
use serde_json::Value;
use sluice_cafe24::Secret;
use sluice_domain::upstream::Unavailable;
use sluice_domain::{ErrorKind, StepError, row_trace_id};
use sluice_redis::{Claim, Tag};
use sluice_sheets::a1::{CellRange, CellRef};
use sluice_sheets::values::ValueInputOption;
use sluice_sheets::{Outcome, SheetsClient};
use std::collections::HashSet;
use std::time::{Duration, Instant};

/// What to do about a failed call.
pub(crate) enum Failure {
    /// Nothing was applied: the rows may be sent again without a check.
    RetryUnsent(Duration),
    /// The call may have been applied: the next claim verifies first.
    RetryUnknown(Duration),
    /// Google refused the access token: refresh it and try once more.
    Refresh,
    /// A person must act on the credential (unless one did since the
    /// flush read it: see `SheetService::fail`).
    ParkCredential(String),
    /// A person must act on the sheet (gone, unreadable range).
    ParkSheet(String),
}

impl<C: ConnectionLike + Clone + Send + Sync> SheetService<C> {
    /// Claims and settles one batch. `Some(next)` ends the run.
    pub(crate) async fn flush_once(
        &self,
        request: &FlushRequest,
        sheet: &Tag,
        started: Instant,
        tally: &mut RunTally,
    ) -> Result<Option<Next>, StepError> {
        let settings = &self.core.config.sheets;
        // `partial`: some of the in-flight rows are in the sheet already, so
        // the batch must stay marked unknown whatever happens to the rest.
        let (rows, fresh, partial) = match self.buffers.claim(sheet, settings.max_rows, settings.max_bytes).await? {
            Claim::Empty => return Ok(Some(Next::Idle)),
            Claim::Fresh(rows) => (parse_rows(&rows)?, true, false),
            Claim::Unsent(rows) => (parse_rows(&rows)?, false, false),
            Claim::Unknown(rows) => {
                let rows = parse_rows(&rows)?;
                let missing = match self.verify(request, sheet, &rows, started, tally).await? {
                    Ok(missing) => missing,
                    Err(next) => return Ok(Some(next)),
                };
                if missing.is_empty() {
                    self.settle(request, sheet, &rows, None, tally).await?;
                    return Ok(None);
                }
                // Not in the sheet yet, and an append that was never
                // answered may still land: look again once it cannot.
                let landing = self.sheet_state.landing_for(sheet).await?;
                if !landing.is_zero() {
                    tracing::info!(sheet = request.sheet, rows = missing.len(), ?landing, "rows may still land");
                    return Ok(Some(Next::Later(landing)));
                }
                // Sent again below. If their append got no answer, it might
                // land later still: look once more later (`sheet_resent`).
                if self.sheet_state.take_unanswered(sheet).await? {
                    let resent: Vec<&str> = missing.iter().map(|row| row.row_id.as_str()).collect();
                    self.sheet_state.note_resent(sheet, &resent, self.core.config.sheets.apply_horizon).await?;
                }
                if missing.len() == rows.len() {
                    // Not applied: send them as unsent rows, under a write admission.
                    self.buffers.mark_unsent(sheet).await?;
                    return Ok(None);
                }
                // Some landed and some did not (only if ids collided with a
                // person's rows): the found ones are done; send the
                // missing ones, keeping all in flight until they are.
                self.found_traces(request, &rows, &missing).await;
                (missing, false, true)
            }
        };
        if !fresh && let Some(next) = self.admit(request, Spend::Write, started).await? {
            if !partial {
                self.buffers.mark_unsent(sheet).await?;
            }
            return Ok(Some(next));
        }
        self.send(request, sheet, &rows, tally, partial).await
    }

    /// Appends `rows` (claimed, admitted) and settles the outcome.
    /// `partial`: other rows of the batch are in the sheet already, so a
    /// failure keeps the batch marked unknown (verified before any resend).
    async fn send(
        &self,
        request: &FlushRequest,
        sheet: &Tag,
        rows: &[BufferedRow],
        tally: &mut RunTally,
        partial: bool,
    ) -> Result<Option<Next>, StepError> {
        let client = self.sheets_client()?;
        let input = self.core.config.sheets.value_input;
        let mut token = match self.token_for(request, sheet, rows, false, partial).await? {
            Ok(token) => token,
            Err(next) => return Ok(Some(next)),
        };
        loop {
            let header = match self.header_row(client, &token.access, request, sheet, rows).await {
                Ok(header) => header,
                // A refused token is refreshed once, whichever call met
                // it first: the header check is the first call a sheet
                // with a header gets.
                Err(Failure::Refresh) if !token.fresh => {
                    token = match self.token_for(request, sheet, rows, true, partial).await? {
                        Ok(token) => token,
                        Err(next) => return Ok(Some(next)),
                    };
                    continue;
                }
                Err(failure) => return self.fail(request, sheet, rows, failure, partial, &token.read).await,
            };
            let body: Vec<Vec<Value>> =
                header.into_iter().chain(rows.iter().map(|row| sheet_row(row, input))).collect();
            tally.calls += 1;
            StepMetrics::add(&self.core.metrics.sheets_calls, 1);
            // Until it is answered, this append may land (see `landing_for`).
            self.sheet_state.mark_landing(sheet, self.core.config.sheets.apply_horizon).await?;
            let outcome = client.append(&token.access, &request.spreadsheet_id, request.sheet_gid, &body, input).await;
            if answered(&outcome)
                && let Err(e) = self.sheet_state.clear_landing(sheet).await
            {
                tracing::warn!(sheet = request.sheet, error = %e, "an answered append still counts as landing");
            }
            if matches!(outcome, Outcome::Throttled { .. }) {
                StepMetrics::add(&self.core.metrics.sheets_429, 1);
            }
            match outcome {
                Outcome::Ok(answer) => {
                    let tail = answer.updates.updated_range.as_deref().and_then(last_row);
                    if !body.is_empty() && body.len() > rows.len() {
                        self.sheet_state.set_header_known(sheet).await?;
                    }
                    self.settle(request, sheet, rows, tail, tally).await?;
                    return Ok(None);
                }
                other => match classify(other) {
                    Failure::Refresh if !token.fresh => {
                        token = match self.token_for(request, sheet, rows, true, partial).await? {
                            Ok(token) => token,
                            Err(next) => return Ok(Some(next)),
                        };
                    }
                    Failure::Refresh => {
                        let why = "Google refused a freshly refreshed token (401)".to_owned();
                        return self
                            .fail(request, sheet, rows, Failure::ParkCredential(why), partial, &token.read)
                            .await;
                    }
                    failure => return self.fail(request, sheet, rows, failure, partial, &token.read).await,
                },
            }
        }
    }

    /// An access token (and which stored credential it came from), or how
    /// the run ends without one.
    async fn token_for(
        &self,
        request: &FlushRequest,
        sheet: &Tag,
        rows: &[BufferedRow],
        force: bool,
        partial: bool,
    ) -> Result<Result<GoogleToken, Next>, StepError> {
        match self.google_token(&request.credential_id, force).await {
            Ok(token) => Ok(Ok(token)),
            Err(TokenProblem::Rejected { why, read }) => {
                let next = self.fail(request, sheet, rows, Failure::ParkCredential(why), partial, &read).await?;
                Ok(Err(next.unwrap_or(Next::Idle)))
            }
            Err(TokenProblem::Unavailable(e)) => {
                tracing::warn!(sheet = request.sheet, error = %e.cause, "no Google access token now");
                self.note_flush(request, sheet, true).await;
                let wait = self.backoff(sheet).await;
                if !partial {
                    self.buffers.mark_unsent(sheet).await?;
                }
                Ok(Err(Next::Later(wait)))
            }
        }
    }

    /// The header row to put first, when the rows bring one and the sheet
    /// may be empty (checked once, then cached).
    async fn header_row(
        &self,
        client: &SheetsClient,
        token: &Secret,
        request: &FlushRequest,
        sheet: &Tag,
        rows: &[BufferedRow],
    ) -> Result<Option<Vec<Value>>, Failure> {
        let Some(header) = rows.iter().find_map(|row| row.header.as_ref()) else { return Ok(None) };
        if self.sheet_state.header_known(sheet).await.unwrap_or(false) {
            return Ok(None);
        }
        let first = CellRange { start: CellRef::cell(1, 1), end: CellRef::cell(1, 1) };
        StepMetrics::add(&self.core.metrics.sheets_calls, 1);
        match client.get(token, &request.spreadsheet_id, request.sheet_gid, Some(first)).await {
            Outcome::Ok(range) if range.values.iter().any(|row| !row.is_empty()) => {
                let _ = self.sheet_state.set_header_known(sheet).await;
                Ok(None)
            }
            Outcome::Ok(_) => Ok(Some(header_cells(header, self.core.config.sheets.value_input))),
            other => Err(classify(other)),
        }
    }
}

/// The header row as the sheet gets it: `row_id`, then the titles, none
/// of which may become a formula.
pub(crate) fn header_cells(titles: &[String], input: ValueInputOption) -> Vec<Value> {
    let titles = titles.iter().map(|title| input.inert(&Value::String(title.clone())));
    std::iter::once(Value::String("row_id".into())).chain(titles).collect()
}

/// A buffered row as the sheet gets it: its id in column A, then its
/// values, none of which may become a formula.
pub(crate) fn sheet_row(row: &BufferedRow, input: ValueInputOption) -> Vec<Value> {
    let id = match input {
        // Always text, whatever it looks like (`007`, `TRUE`, `=x`).
        ValueInputOption::UserEntered => format!("'{}", row.row_id),
        ValueInputOption::Raw => row.row_id.clone(),
    };
    let values = row.values.iter().map(|value| input.inert(value));
    std::iter::once(Value::String(id)).chain(values).collect()
}

/// The row ids column A's cells stand for. A cell holds the id exactly
/// (both options store it as text, without the apostrophe `USER_ENTERED`
/// sent); a sheet that kept a leading apostrophe (a person's paste, say)
/// is read both with and without it, so an id that itself starts with an
/// apostrophe (`'x`) is found as well as one that does not.
pub(crate) fn found_ids<'a>(cells: impl IntoIterator<Item = &'a Value>) -> HashSet<String> {
    let mut found = HashSet::new();
    for text in cells.into_iter().filter_map(cell_text) {
        if let Some(unquoted) = text.strip_prefix('\'') {
            found.insert(unquoted.to_owned());
        }
        found.insert(text);
    }
    found
}

/// A column A cell as text: strings and numbers (ids are never anything
/// else), `None` for the rest.
pub(crate) fn cell_text(cell: &Value) -> Option<String> {
    match cell {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn parse_rows(rows: &[String]) -> Result<Vec<BufferedRow>, StepError> {
    let unreadable = |e| StepError::new(ErrorKind::Internal, format!("a buffered row is not readable: {e}"));
    rows.iter().map(|row| serde_json::from_str(row).map_err(unreadable)).collect()
}

/// The last row of an `updatedRange` such as `Sheet1!A6:C7`.
fn last_row(range: &str) -> Option<u32> {
    sluice_sheets::a1::A1Range::parse(range).ok()?.cells?.end.row
}

/// The ids of `rows` not among `found`.
pub(crate) fn missing_rows(rows: &[BufferedRow], found: &HashSet<String>) -> Vec<BufferedRow> {
    rows.iter().filter(|row| !found.contains(&row.row_id)).cloned().collect()
}

pub(crate) fn classify<T>(outcome: Outcome<T>) -> Failure {
    let why = outcome.to_string();
    match outcome {
        Outcome::Ok(_) => Failure::RetryUnsent(Duration::ZERO),
        Outcome::Throttled { retry_after, .. } => Failure::RetryUnsent(retry_after.unwrap_or(Duration::from_secs(1))),
        Outcome::Unauthorized { .. } => Failure::Refresh,
        Outcome::Forbidden { .. } => Failure::ParkCredential(why),
        Outcome::NotFound { .. } | Outcome::InvalidTarget { .. } => Failure::ParkSheet(why),
        Outcome::BadRequest { error: Some(ref e), .. } if e.is_unknown_title() => Failure::RetryUnsent(Duration::ZERO),
        Outcome::BadRequest { .. } => Failure::ParkSheet(why),
        Outcome::Unavailable { .. } => Failure::RetryUnsent(Duration::ZERO),
        Outcome::OutcomeUnknown { .. } => Failure::RetryUnknown(Duration::ZERO),
    }
}

/// Whether Google answered the call: processing is over, so what it did is
/// in the sheet (or was never applied). A timeout or a broken answer says
/// nothing of the kind.
fn answered<T>(outcome: &Outcome<T>) -> bool {
    !matches!(outcome, Outcome::OutcomeUnknown { cause: Unavailable::Timeout | Unavailable::Body(_) })
}

/// The transaction logs of `rows`, rows of `request`'s credential.
pub(crate) fn trace_ids(request: &FlushRequest, rows: &[BufferedRow]) -> Vec<String> {
    rows.iter().map(|row| row_trace_id(&request.credential_id, &row.row_id)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(id: &str, values: Vec<Value>) -> BufferedRow {
        BufferedRow { row_id: id.into(), event_id: format!("e-{id}"), values, header: None }
    }

    #[test]
    fn raw_sends_everything_as_it_is() {
        let values = vec![json!("=1+1"), json!("-A1"), json!("'x"), json!(-12), json!(null)];
        let sent = sheet_row(&row("=id", values.clone()), ValueInputOption::Raw);
        assert_eq!(sent[0], json!("=id"));
        assert_eq!(sent[1..], values);
        let titles = ["=HYPERLINK(\"x\")".to_owned(), "name".to_owned()];
        assert_eq!(
            header_cells(&titles, ValueInputOption::Raw),
            vec![json!("row_id"), json!(titles[0]), json!("name")]
        );
    }

    #[test]
    fn user_entered_sends_the_id_and_formula_looking_text_as_text() {
        let values = vec![json!("=1+1"), json!("@x"), json!("\t=1"), json!("-12"), json!("'x"), json!(3), json!(true)];
        let sent = sheet_row(&row("007", values), ValueInputOption::UserEntered);
        let expected = [json!("'007"), json!("'=1+1"), json!("'@x"), json!("'\t=1"), json!("-12"), json!("'x")];
        assert_eq!(sent[..6], expected);
        assert_eq!(sent[6..], [json!(3), json!(true)]);
        let titles = ["+total".to_owned(), "name".to_owned()];
        let header = header_cells(&titles, ValueInputOption::UserEntered);
        assert_eq!(header, vec![json!("row_id"), json!("'+total"), json!("name")]);
    }

    #[test]
    fn ids_are_found_with_or_without_a_kept_apostrophe() {
        let cells = [json!("'x"), json!("=y"), json!(7), json!("'"), json!(true)];
        let found = found_ids(&cells);
        for id in ["'x", "x", "=y", "7", "'", ""] {
            assert!(found.contains(id), "{id:?} in {found:?}");
        }
        assert_eq!(found.len(), 6);
    }
}
