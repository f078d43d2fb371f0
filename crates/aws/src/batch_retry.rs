//! How a partly failed `SendMessageBatch` is retried.
//!
//! SQS answers a batch per entry. An entry failed with `SenderFault` is
//! wrong in itself (a bad parameter) and is reported at once; any other
//! failed entry (throttled, internal error) is sent again, alone with the
//! other such entries, after a backoff, up to a number of attempts. Entries
//! SQS accepted are never sent again. Whole-call failures (connection
//! errors, 5xx) are the SDK's own retry policy's business.

use std::time::Duration;

/// Attempts and backoff for failed entries of one batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchRetry {
    /// Attempts in all, the first included (at least 1).
    pub attempts: u32,
    /// Wait before the second attempt; doubled before each later one.
    pub first_backoff: Duration,
    /// Longest wait between attempts.
    pub max_backoff: Duration,
}

impl Default for BatchRetry {
    fn default() -> Self {
        Self { attempts: 4, first_backoff: Duration::from_millis(100), max_backoff: Duration::from_secs(2) }
    }
}

impl BatchRetry {
    /// The wait before attempt `attempt` (1-based; none before the first).
    pub fn backoff(&self, attempt: u32) -> Duration {
        if attempt <= 1 {
            return Duration::ZERO;
        }
        let factor = 1u32.checked_shl(attempt - 2).unwrap_or(u32::MAX);
        self.first_backoff.saturating_mul(factor).min(self.max_backoff)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let r = BatchRetry::default();
        let ms = |n| Duration::from_millis(n);
        assert_eq!([1, 2, 3, 4, 5, 6].map(|a| r.backoff(a)), [ms(0), ms(100), ms(200), ms(400), ms(800), ms(1600)]);
        assert_eq!(r.backoff(7), ms(2000));
        assert_eq!(r.backoff(60), ms(2000));
    }
}
