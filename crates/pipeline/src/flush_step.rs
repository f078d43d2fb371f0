//! The flush step: appends a sheet's buffered rows to Google Sheets, many
//! per call, exactly once, within the credential's and the project's write
//! quotas.
//!
//! - **One flush per sheet at a time:** the sheet's lock. A flush that finds
//!   it held ends at once (`busy`): the holder looks at the buffer again
//!   after it lets go (see `flush_request`), and in case the holder died
//!   holding it, the busy flush asks again for when its lease ends.
//! - **Adaptive batching:** the holder asks the limiter *before* it claims
//!   rows, and waits out a short denial holding the lock, so every row that
//!   arrives meanwhile joins the append it is waiting for. A lone row on an
//!   idle sheet goes out after one short look at the buffer (`gather`,
//!   100 ms): while a burst is still pouring in, the flush waits for it to
//!   stop (up to `gather_max`). The credential's limit has a minimum
//!   spacing of window/max (1 s for 60/min), which spreads the budget over
//!   the minute instead of spending it in the first second of a burst.
//!   Together they turn a burst of 1,000 rows into one or two calls.
//! - **Exactly once:** rows move to the in-flight list before the call
//!   (`SheetBuffers::claim`), each written row carries its row id in
//!   column A, and rows whose append may have been applied (a timeout, a
//!   5xx, a crash) are looked for in the sheet's tail before they are sent
//!   again (`sheet_append`).
//! - **Longer waits** (the quota is spent, a backoff) end the run with a
//!   delayed flush request: nothing polls.

use crate::config::SheetConfig;
use crate::flush_request::{FLUSH_GATE, Why};
use crate::sheet_io::{FlushNext, FlushOutput, FlushRequest};
use crate::sheet_service::SheetService;
use crate::step_metrics::StepMetrics;
use redis::aio::ConnectionLike;
use serde_json::json;
use sluice_domain::StepError;
use sluice_redis::{Acquire, Admission, Lease, Limit, LimitSet, SlidingWindowLimiter, Tag};
use std::time::{Duration, Instant};

/// The sheet's flush lock, under the sheet's tag.
pub(crate) const FLUSH_LOCK: &str = "flush";

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Next {
    /// Nothing left to send.
    Idle,
    /// Rows are left, but this run's time is up: flush again at once.
    Budget,
    /// Rows are left; flush again after this long.
    Later(Duration),
    /// The rows wait for a person (credential or sheet); nothing is asked
    /// for until a redrive.
    Parked(String),
}

/// What one run did, for the output and the traces.
#[derive(Debug, Default)]
pub(crate) struct RunTally {
    pub appended_rows: u64,
    pub calls: u64,
}

impl RunTally {
    fn output(&self, next: FlushNext, wait_seconds: u64, parked: Option<String>) -> FlushOutput {
        FlushOutput { appended_rows: self.appended_rows, calls: self.calls, next, wait_seconds, parked }
    }
}

/// Which quota an upstream call spends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Spend {
    Write,
    Read,
}

impl<C: ConnectionLike + Clone + Send + Sync> SheetService<C> {
    pub async fn flush_sheet(&self, request: FlushRequest) -> Result<FlushOutput, StepError> {
        let sheet = Tag::for_sheet(&request.sheet);
        if let Some(reason) = self.credentials.rejected(&request.credential_id).await? {
            // Rows stay buffered, in order, until `sluice credentials set`.
            self.core.gates.clear(&sheet, FLUSH_GATE, &request.token).await?;
            self.look_again_unless_rejected(&request, &sheet).await?;
            return Ok(RunTally::default().output(FlushNext::Parked, 0, Some(reason)));
        }
        let lease = match self.core.locks.acquire(&sheet, FLUSH_LOCK, self.core.config.sheets.flush_lease).await? {
            Acquire::Acquired(lease) => lease,
            Acquire::Busy { retry_after } => {
                // A living holder looks at the buffer again after it lets
                // go; a dead one (a process killed mid-flush) never will,
                // and its lock holds until its lease ends. So this request
                // gives up its mark and asks again for when the lease is
                // over: with a living holder that run finds little to do.
                self.core.gates.clear(&sheet, FLUSH_GATE, &request.token).await?;
                self.request_flush(&request, retry_after, Why::Wait).await?;
                return Ok(RunTally::default().output(FlushNext::Busy, 0, None));
            }
        };
        let mut tally = RunTally::default();
        let run_started = Instant::now();
        let outcome = self.flush_holding(&request, &sheet, &lease, &mut tally).await;
        StepMetrics::add(&self.core.metrics.flush_ms, run_started.elapsed().as_millis() as u64);
        // Clear this request's mark, then let go, then look again: a row
        // that came while the mark was up asked for nothing.
        let cleared = self.core.gates.clear(&sheet, FLUSH_GATE, &request.token).await;
        if let Err(e) = self.core.locks.release(&lease).await {
            tracing::warn!(sheet = request.sheet, error = %e, "flush lock not released");
        }
        cleared?;
        let next = match outcome {
            Ok(next) => next,
            Err(e) => {
                // Whatever is in flight stays there, marked unknown: the next
                // flush verifies it. Ask for that flush after a backoff.
                let wait = self.backoff(&sheet).await;
                self.request_flush(&request, wait, Why::Wait).await?;
                return Err(e);
            }
        };
        match &next {
            Next::Idle | Next::Budget => self.look_again(&request, &sheet).await?,
            Next::Later(wait) => self.request_flush(&request, *wait, Why::Wait).await?,
            Next::Parked(_) => self.look_again_unless_rejected(&request, &sheet).await?,
        }
        Ok(match next {
            Next::Idle => tally.output(FlushNext::Idle, 0, None),
            Next::Budget => tally.output(FlushNext::Later, 0, None),
            Next::Later(wait) => tally.output(FlushNext::Later, wait.as_secs_f64().ceil() as u64, None),
            Next::Parked(why) => tally.output(FlushNext::Parked, 0, Some(why)),
        })
    }

    async fn flush_holding(
        &self,
        request: &FlushRequest,
        sheet: &Tag,
        lease: &Lease,
        tally: &mut RunTally,
    ) -> Result<Next, StepError> {
        let settings = &self.core.config.sheets;
        let started = Instant::now();
        loop {
            if started.elapsed() >= settings.flush_budget {
                return Ok(Next::Budget);
            }
            // A full lease for what follows: an append ends (or times out)
            // well within it, so no second flush can take the sheet while
            // this one's call is in the air. A lease that ran out fails here.
            self.core.locks.extend(lease, settings.flush_lease).await?;
            let backlog = self.buffers.backlog(sheet).await?;
            if backlog.parked > 0 {
                return Ok(Next::Parked(format!("{} rows of this sheet are parked", backlog.parked)));
            }
            if backlog.buffered + backlog.in_flight == 0 {
                // Idle: the moment to look for copies of rows sent again.
                return Ok(self.check_resent(request, sheet, started, tally).await?.unwrap_or(Next::Idle));
            }
            if backlog.in_flight == 0 {
                self.gather(sheet, backlog.buffered, started).await?;
                if let Some(next) = self.admit(request, Spend::Write, started).await? {
                    return Ok(next);
                }
            }
            if let Some(next) = self.flush_once(request, sheet, started, tally).await? {
                return Ok(next);
            }
        }
    }

    /// After this request's mark is cleared: asks for the sheet's flush
    /// when rows wait and none is parked (a row that came while the mark
    /// was up asked for nothing).
    async fn look_again(&self, request: &FlushRequest, sheet: &Tag) -> Result<(), StepError> {
        let backlog = self.buffers.backlog(sheet).await?;
        if backlog.buffered + backlog.in_flight > 0 && backlog.parked == 0 {
            self.request_flush(request, Duration::ZERO, Why::Rows).await?;
        }
        Ok(())
    }

    /// [`look_again`](Self::look_again) after a parked run, unless the
    /// credential is (still) rejected: a `sluice credentials set` that came
    /// while this run held the mark had its ask for this sheet's flush
    /// turned away, and a parked run asks for nothing else.
    async fn look_again_unless_rejected(&self, request: &FlushRequest, sheet: &Tag) -> Result<(), StepError> {
        if self.credentials.rejected(&request.credential_id).await?.is_some() {
            return Ok(());
        }
        self.look_again(request, sheet).await
    }

    /// Spends one call of `spend`'s quotas, waiting for it here when the
    /// wait is short. `Some(next)` when the run must end instead.
    pub(crate) async fn admit(
        &self,
        request: &FlushRequest,
        spend: Spend,
        started: Instant,
    ) -> Result<Option<Next>, StepError> {
        let settings = &self.core.config.sheets;
        let set = quota_set(&self.limiter, settings, &request.credential_id, spend)?;
        loop {
            match self.limiter.acquire(&set, 1).await? {
                Admission::Admitted { .. } => return Ok(None),
                Admission::Denied { wait, .. } => {
                    if wait > settings.inline_wait_max || started.elapsed() + wait > settings.flush_budget {
                        return Ok(Some(Next::Later(wait)));
                    }
                    self.core.metrics.waited(wait);
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }

    /// While rows are still pouring in (a burst through the queue), waits
    /// until the buffer stops growing for one `gather` interval, it holds
    /// a full append, or `gather_max` passed: a burst then goes out in one
    /// call instead of one per second. A lone row waits one interval.
    /// Before the quota is asked, so the call follows its admission at once.
    async fn gather(&self, sheet: &Tag, mut buffered: u64, started: Instant) -> Result<(), StepError> {
        let settings = &self.core.config.sheets;
        if settings.gather.is_zero() {
            return Ok(());
        }
        let until = Instant::now() + settings.gather_max;
        while buffered < settings.max_rows as u64
            && Instant::now() + settings.gather <= until
            && started.elapsed() + settings.gather < settings.flush_budget
        {
            tokio::time::sleep(settings.gather).await;
            let now = self.buffers.backlog(sheet).await?.buffered;
            if now == buffered {
                break;
            }
            buffered = now;
        }
        Ok(())
    }

    /// How long to wait after another failed flush of `sheet`.
    pub(crate) async fn backoff(&self, sheet: &Tag) -> Duration {
        backoff_after(self.sheet_state.note_failure(sheet).await.unwrap_or(1))
    }

    /// Puts `sheet`'s parked rows back at the head of its buffer and asks
    /// for its flush. Returns how many rows moved.
    pub(crate) async fn redrive_sheet(&self, request: &FlushRequest) -> Result<u64, StepError> {
        let group_key = request.sheet.as_str();
        let sheet = Tag::for_sheet(group_key);
        let moved = self.buffers.redrive(&sheet).await?;
        let backlog = self.buffers.backlog(&sheet).await?;
        if backlog.buffered + backlog.in_flight > 0 {
            self.request_flush(request, Duration::ZERO, Why::Rows).await?;
        }
        if moved > 0 {
            tracing::info!(sheet = group_key, rows = moved, "parked rows redriven");
            self.core.trace(&format!("sheet:{group_key}"), "REDRIVEN", json!({"rows": moved})).await;
        }
        Ok(moved)
    }
}

/// The limits a call with `credential_id` spends, under the project's tag
/// (the credential's and the project's are checked together).
pub(crate) fn quota_set<C: ConnectionLike + Clone + Send + Sync>(
    limiter: &SlidingWindowLimiter<C>,
    settings: &SheetConfig,
    credential_id: &str,
    spend: Spend,
) -> Result<LimitSet, StepError> {
    let limits = quota(credential_id, spend, settings);
    Ok(limiter.limits(&Tag::for_google_project(&settings.google_project), &limits)?)
}

/// The limits one call spends: the credential's (spread evenly over its
/// window) and the project's, for writes or for reads.
fn quota(credential_id: &str, spend: Spend, settings: &SheetConfig) -> Vec<Limit> {
    let (kind, (per_user, user_window), (per_project, project_window)) = match spend {
        Spend::Write => ("w", settings.per_credential, settings.per_project),
        Spend::Read => ("r", settings.read_per_credential, settings.read_per_project),
    };
    let (user_window, project_window) = (user_window + settings.quota_margin, project_window + settings.quota_margin);
    let spacing = user_window / per_user.max(1);
    vec![
        Limit::new(format!("{kind}:cred:{credential_id}"), per_user, user_window).with_min_spacing(spacing),
        Limit::new(format!("{kind}:project"), per_project, project_window),
    ]
}

/// The wait after `failures` failed flushes in a row: 1 s, doubling, at
/// most 64 s, the most Google's guidance for the Sheets API's exponential
/// backoff suggests. It used to double to 5 minutes, and after a burst of
/// 5xx and 429s a sheet whose credential was mended waited over a minute
/// before its next append (the upstream faults run).
fn backoff_after(failures: u32) -> Duration {
    Duration::from_secs(1 << failures.clamp(1, 7).saturating_sub(1))
}

#[cfg(test)]
mod backoff_tests {
    use super::*;

    #[test]
    fn the_backoff_doubles_from_one_second_to_at_most_64() {
        let waits: Vec<u64> = (0..10).map(|n| backoff_after(n).as_secs()).collect();
        assert_eq!(waits, [1, 1, 2, 4, 8, 16, 32, 64, 64, 64]);
    }
}
