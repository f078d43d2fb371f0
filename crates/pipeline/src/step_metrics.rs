//! What the steps count for CloudWatch: upstream calls and 429s per
//! upstream, quota and budget waits, sheet rows buffered and appended, and
//! how long flushes take. Counted in process; a function takes the counts
//! after each invocation ([`StepMetrics::take_emf`]) and prints them as one
//! EMF line, so each count is reported once.

use sluice_domain::emf::{EmfLine, Unit};
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Default)]
pub struct StepMetrics {
    pub(crate) cafe24_calls: AtomicU64,
    pub(crate) cafe24_429: AtomicU64,
    pub(crate) sheets_calls: AtomicU64,
    pub(crate) sheets_429: AtomicU64,
    pub(crate) limiter_waits: AtomicU64,
    pub(crate) limiter_wait_ms: AtomicU64,
    pub(crate) rows_buffered: AtomicU64,
    pub(crate) rows_appended: AtomicU64,
    pub(crate) flush_ms: AtomicU64,
    /// Messages and FIFO groups of the pipe batches planned (one batch per
    /// invocation of plan-batch, so the EMF value is the batch size), and
    /// how many of the messages were redeliveries.
    pub(crate) batch_messages: AtomicU64,
    pub(crate) batch_groups: AtomicU64,
    pub(crate) redelivered: AtomicU64,
}

impl StepMetrics {
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// Prints the counts since the last call as one EMF line on standard
    /// output, where Lambda hands it to CloudWatch Logs (which makes the
    /// metrics). The stage comes from `SLUICE_STAGE` (`local` without it).
    pub fn print_emf(&self, function: &str) {
        let stage = std::env::var("SLUICE_STAGE").unwrap_or_else(|_| "local".into());
        if let Some(line) = self.take_emf(&stage, function) {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis());
            println!("{}", line.render(now as u64));
        }
    }

    /// The counts since the last take, as an EMF line for `function` in
    /// `stage`, and zeroed; `None` when nothing was counted.
    pub fn take_emf(&self, stage: &str, function: &str) -> Option<EmfLine> {
        let take = |c: &AtomicU64| c.swap(0, Ordering::Relaxed) as f64;
        let mut line = EmfLine::new(&[("Stage", stage), ("Function", function)]);
        let (cafe24_429, sheets_429) = (take(&self.cafe24_429), take(&self.sheets_429));
        line.add("UpstreamCalls", Unit::Count, take(&self.cafe24_calls) + take(&self.sheets_calls))
            .add("Upstream429", Unit::Count, cafe24_429 + sheets_429)
            .add("Cafe24Throttled", Unit::Count, cafe24_429)
            .add("SheetsThrottled", Unit::Count, sheets_429)
            .add("LimiterWaits", Unit::Count, take(&self.limiter_waits))
            .add("LimiterWaitTime", Unit::Milliseconds, take(&self.limiter_wait_ms))
            .add("SheetRowsBuffered", Unit::Count, take(&self.rows_buffered))
            .add("SheetRowsAppended", Unit::Count, take(&self.rows_appended))
            .add("FlushTime", Unit::Milliseconds, take(&self.flush_ms))
            .add("PipeBatchSize", Unit::Count, take(&self.batch_messages))
            .add("PipeBatchGroups", Unit::Count, take(&self.batch_groups))
            .add("Redelivered", Unit::Count, take(&self.redelivered));
        (!line.is_empty()).then_some(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_taken_once() {
        let metrics = StepMetrics::default();
        assert!(metrics.take_emf("prod", "fetch").is_none());
        StepMetrics::add(&metrics.cafe24_calls, 3);
        StepMetrics::add(&metrics.cafe24_429, 1);
        let line = metrics.take_emf("prod", "fetch").unwrap().render(1);
        let value: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!((value["UpstreamCalls"].as_f64(), value["Upstream429"].as_f64()), (Some(3.0), Some(1.0)));
        assert!(metrics.take_emf("prod", "fetch").is_none(), "taken once");
    }

    #[test]
    fn a_planned_batch_reports_its_size() {
        let metrics = StepMetrics::default();
        StepMetrics::add(&metrics.batch_messages, 10);
        StepMetrics::add(&metrics.batch_groups, 4);
        let line = metrics.take_emf("prod", "plan-batch").unwrap().render(1);
        let value: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!((value["PipeBatchSize"].as_f64(), value["PipeBatchGroups"].as_f64()), (Some(10.0), Some(4.0)));
    }
}
