//! Asking for a sheet's flush, at most once at a time: the sheet's flush
//! gate holds the pending request's token (`<128 random bits>@<due ms>@<why>`)
//! from the ask until the flush it asked for ends, so while a flush is
//! pending or running, new rows ask for nothing (they will be in the next
//! append anyway). The flush clears its token just before it lets go of
//! the sheet and then looks at the buffer once more, so a row that arrived
//! in between is never stranded.
//!
//! One exception: when the pending request is a delayed one waiting for
//! rows (the seed's 10 s) and the buffer reaches the threshold, an
//! immediate request goes out beside it, as the seed's `promote()` did;
//! whichever flush runs second finds little or nothing to do.

use crate::sheet_io::FlushRequest;
use crate::steps::{Steps, now_ms};
use redis::aio::ConnectionLike;
use sluice_domain::{ErrorKind, StepError};
use sluice_redis::{Entry, Tag};
use std::time::Duration;

/// The sheet's flush gate, under the sheet's tag.
pub(crate) const FLUSH_GATE: &str = "flush";

/// Why a flush is asked for: it decides whether a pending request may be
/// overtaken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Why {
    /// The buffer reached the threshold (with the defaults: any row).
    Rows,
    /// Rows wait for the maximum delay.
    MaxDelay,
    /// The previous flush waits for the upstream's budget or backs off.
    Wait,
}

impl Why {
    fn code(self) -> char {
        match self {
            Self::Rows => 'r',
            Self::MaxDelay => 'd',
            Self::Wait => 'w',
        }
    }
}

impl<C: ConnectionLike + Clone + Send + Sync> Steps<C> {
    /// Asks for `request`'s sheet to be flushed after `delay`, unless a
    /// request is already pending.
    pub(crate) async fn request_flush(
        &self,
        request: &FlushRequest,
        delay: Duration,
        why: Why,
    ) -> Result<(), StepError> {
        let sheet = Tag::for_sheet(&request.sheet);
        let due_ms = now_ms() + delay.as_millis() as u64;
        let token = format!("{:032x}@{due_ms}@{}", rand::random::<u128>(), why.code());
        let request = request.with_token(token.clone());
        let timeout = self.config.sheets.request_timeout.max(delay + Duration::from_secs(60));
        match self.gates.mark_pending(&sheet, FLUSH_GATE, &token, timeout).await? {
            Entry::Passed => {
                if let Err(e) = self.trigger()?.request(&request, delay).await {
                    // Undo, so the next row asks again.
                    let _ = self.gates.clear(&sheet, FLUSH_GATE, &token).await;
                    return Err(e);
                }
            }
            Entry::Closed { holder, .. } => {
                let mut parts = holder.split('@').skip(1);
                let pending_due = parts.next().and_then(|d| d.parse::<u64>().ok()).unwrap_or(0);
                let pending_why = parts.next().unwrap_or("");
                if why == Why::Rows && pending_why == "d" && pending_due > due_ms {
                    self.trigger()?.request(&request, Duration::ZERO).await?;
                }
            }
        }
        Ok(())
    }

    pub(crate) fn trigger(&self) -> Result<&dyn crate::flush_trigger::FlushTrigger, StepError> {
        self.flush_trigger
            .as_deref()
            .ok_or_else(|| StepError::new(ErrorKind::Internal, "no flush trigger configured for the sheet path"))
    }
}
