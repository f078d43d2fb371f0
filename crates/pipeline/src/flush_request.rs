//! Asking for a sheet's flush, at most once at a time: the sheet's flush
//! gate holds the pending request's [`FlushToken`]
//! from the ask until the flush it asked for ends, so while a flush is
//! pending or running, new rows ask for nothing (they will be in the next
//! append anyway). The flush clears its token just before it lets go of
//! the sheet and then looks at the buffer once more, so a row that arrived
//! in between is never stranded. A parked run looks too, unless its
//! credential is (still) rejected: a redrive (`sluice credentials set`)
//! that came while its mark was up had its ask turned away.
//!
//! One exception: when the pending request is a delayed one waiting for
//! rows (`max_delay`) and the buffer reaches the threshold, an immediate
//! request goes out beside it, so a full buffer never sits out the delay;
//! whichever flush runs second finds little or nothing to do.

use crate::service_core::now_ms;
use crate::sheet_io::FlushRequest;
use crate::sheet_service::SheetService;
use redis::aio::ConnectionLike;
use sluice_domain::StepError;
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

    fn from_code(code: &str) -> Option<Self> {
        [Self::Rows, Self::MaxDelay, Self::Wait].into_iter().find(|why| code.len() == 1 && code.starts_with(why.code()))
    }
}

/// A flush request's token, as the sheet's flush gate holds it:
/// `<128 random bits, hex>@<due, ms since the epoch>@<why>`. The random
/// part makes it this request's own; due and why say whether a new request
/// may overtake it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FlushToken {
    nonce: u128,
    due_ms: u64,
    why: Why,
}

impl FlushToken {
    fn new(due_ms: u64, why: Why) -> Self {
        Self { nonce: rand::random(), due_ms, why }
    }

    /// `None` for a holder this version did not write.
    fn parse(holder: &str) -> Option<Self> {
        let mut parts = holder.split('@');
        let nonce = u128::from_str_radix(parts.next()?, 16).ok()?;
        let due_ms = parts.next()?.parse().ok()?;
        let why = Why::from_code(parts.next()?)?;
        parts.next().is_none().then_some(Self { nonce, due_ms, why })
    }
}

impl std::fmt::Display for FlushToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:032x}@{}@{}", self.nonce, self.due_ms, self.why.code())
    }
}

impl<C: ConnectionLike + Clone + Send + Sync> SheetService<C> {
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
        let token = FlushToken::new(due_ms, why).to_string();
        let request = request.with_token(token.clone());
        let timeout = self.core.config.sheets.request_timeout.max(delay + Duration::from_secs(60));
        match self.core.gates.mark_pending(&sheet, FLUSH_GATE, &token, timeout).await? {
            Entry::Passed => {
                if let Err(e) = self.trigger.request(&request, delay).await {
                    // Undo, so the next row asks again.
                    let _ = self.core.gates.clear(&sheet, FLUSH_GATE, &token).await;
                    return Err(e);
                }
            }
            Entry::Closed { holder, .. } => {
                let overtakes = |pending: FlushToken| pending.why == Why::MaxDelay && pending.due_ms > due_ms;
                if why == Why::Rows && FlushToken::parse(&holder).is_some_and(overtakes) {
                    self.trigger.request(&request, Duration::ZERO).await?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_reads_back_as_written_and_a_foreign_holder_is_none() {
        for why in [Why::Rows, Why::MaxDelay, Why::Wait] {
            let token = FlushToken::new(1_763_000_000_123, why);
            assert_eq!(FlushToken::parse(&token.to_string()), Some(token));
        }
        for foreign in ["", "1", "abc@1@r@x", "zz@1@r", "ab@x@r", "ab@1@q", "ab@1@rr"] {
            assert_eq!(FlushToken::parse(foreign), None, "{foreign}");
        }
    }
}
