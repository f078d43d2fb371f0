//! Copies sluice may have made after all. A row a verify did not find is
//! sent again once no append of it can still land (`apply_horizon`, from
//! Google's 180 s processing limit). Should Google apply the first append
//! later than that anyway, the sheet holds the row twice; nobody can rule
//! that out from here, so sluice looks: rows sent again are noted
//! (`SheetState::note_resent`), and once the horizon has passed again, the
//! sheet's next idle moment reads column A once, and any of them found more
//! than once is reported (a `DUPLICATED` trace entry, the
//! `SheetRowsDuplicated` metric, an alert). Then they are forgotten: a
//! copy landing later still is not looked for.

use crate::flush_step::{Next, RunTally, Spend};
use crate::sheet_io::FlushRequest;
use crate::sheet_service::SheetService;
use crate::sheet_settle::duplicated_ids;
use redis::aio::ConnectionLike;
use sluice_domain::StepError;
use sluice_redis::Tag;
use std::time::{Duration, Instant};

impl<C: ConnectionLike + Clone + Send + Sync> SheetService<C> {
    /// At an idle moment: looks for copies of the rows sent again, once
    /// their check is due. `Some(next)` when the run must come back for it.
    pub(crate) async fn check_resent(
        &self,
        request: &FlushRequest,
        sheet: &Tag,
        started: Instant,
        tally: &mut RunTally,
    ) -> Result<Option<Next>, StepError> {
        let (ids, wait) = self.sheet_state.resent(sheet).await?;
        if ids.is_empty() {
            return Ok(None);
        }
        if !wait.is_zero() {
            return Ok(Some(Next::Later(wait)));
        }
        if let Some(next) = self.admit(request, Spend::Read, started).await? {
            return Ok(Some(next));
        }
        let client = self.sheets_client()?;
        let read = match self.google_token(&request.credential_id, false).await {
            Ok(token) => self.column_a(client, &token.access, request, tally).await.ok(),
            // Whatever the reason, this check can always wait.
            Err(_) => None,
        };
        let Some(cells) = read else {
            // Google did not answer the read: look again after a backoff.
            return Ok(Some(Next::Later(self.backoff(sheet).await.max(Duration::from_secs(1)))));
        };
        let cells: Vec<&serde_json::Value> = cells.iter().collect();
        self.report_duplicates(request, &duplicated_ids(&ids, &cells)).await;
        self.sheet_state.clear_resent(sheet).await?;
        Ok(None)
    }
}
