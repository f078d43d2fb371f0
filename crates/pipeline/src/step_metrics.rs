//! What the steps count for CloudWatch: upstream calls and 429s per
//! upstream, quota and budget waits, sheet rows buffered and appended, how
//! long flushes take, and the pipe batches planned. Counted in process as
//! running totals: `sluice dev` serves them at `GET /metrics`
//! (from [`COUNTERS`]); a function prints what each invocation added
//! as one EMF line ([`StepMetrics::take_emf`]), so each count reaches
//! CloudWatch once.

use sluice_domain::emf::Unit::{Count, Milliseconds};
use sluice_domain::emf::{Counter, EmfLine, Reported, dimensions};
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Default)]
pub struct StepMetrics {
    pub(crate) cafe24_calls: AtomicU64,
    pub(crate) cafe24_429: AtomicU64,
    pub(crate) sheets_calls: AtomicU64,
    pub(crate) sheets_429: AtomicU64,
    pub(crate) limiter_waits: AtomicU64,
    pub(crate) limiter_wait_ms: AtomicU64,
    /// Fetches its mall's bucket could not serve at once, handed over to
    /// the mall's dirty set (flow control) instead of waiting.
    pub(crate) fetches_handed_over: AtomicU64,
    pub(crate) rows_buffered: AtomicU64,
    pub(crate) rows_appended: AtomicU64,
    /// Row ids a verify found more than once in their sheet: rows sluice
    /// wrote twice (an append Google applied past the apply horizon).
    pub(crate) rows_duplicated: AtomicU64,
    pub(crate) flush_ms: AtomicU64,
    /// Messages and FIFO groups of the pipe batches planned (one batch per
    /// invocation of plan-batch, so the EMF value is the batch size), and
    /// how many of the messages were redeliveries.
    pub(crate) batch_messages: AtomicU64,
    pub(crate) batch_groups: AtomicU64,
    pub(crate) redelivered: AtomicU64,
    reported: Reported,
}

const CAFE24: &str = r#"{upstream="cafe24"}"#;
const SHEETS: &str = r#"{upstream="sheets"}"#;

/// Every count, under its `/metrics` name (`sluice_steps_<name>_total`) and
/// the EMF metrics it adds to. A family's lines are listed together, as the
/// Prometheus text format wants them.
pub const COUNTERS: &[Counter<StepMetrics>] = &[
    Counter::new("upstream_calls", CAFE24, &[("UpstreamCalls", Count)], |m| &m.cafe24_calls),
    Counter::new("upstream_calls", SHEETS, &[("UpstreamCalls", Count)], |m| &m.sheets_calls),
    Counter::new("upstream_429", CAFE24, &[("Upstream429", Count), ("Cafe24Throttled", Count)], |m| &m.cafe24_429),
    Counter::new("upstream_429", SHEETS, &[("Upstream429", Count), ("SheetsThrottled", Count)], |m| &m.sheets_429),
    Counter::new("limiter_waits", "", &[("LimiterWaits", Count)], |m| &m.limiter_waits),
    Counter::new("limiter_wait_ms", "", &[("LimiterWaitTime", Milliseconds)], |m| &m.limiter_wait_ms),
    Counter::new("fetches_handed_over", "", &[("FetchesHandedOver", Count)], |m| &m.fetches_handed_over),
    Counter::new("sheet_rows_buffered", "", &[("SheetRowsBuffered", Count)], |m| &m.rows_buffered),
    Counter::new("sheet_rows_appended", "", &[("SheetRowsAppended", Count)], |m| &m.rows_appended),
    Counter::new("sheet_rows_duplicated", "", &[("SheetRowsDuplicated", Count)], |m| &m.rows_duplicated),
    Counter::new("flush_ms", "", &[("FlushTime", Milliseconds)], |m| &m.flush_ms),
    Counter::new("pipe_batch_messages", "", &[("PipeBatchSize", Count)], |m| &m.batch_messages),
    Counter::new("pipe_batch_groups", "", &[("PipeBatchGroups", Count)], |m| &m.batch_groups),
    Counter::new("redelivered", "", &[("Redelivered", Count)], |m| &m.redelivered),
];

impl StepMetrics {
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// One wait for budget or quota, and how long it was.
    pub(crate) fn waited(&self, wait: std::time::Duration) {
        Self::add(&self.limiter_waits, 1);
        Self::add(&self.limiter_wait_ms, wait.as_millis() as u64);
    }

    /// Prints what was counted since the last call as one EMF line on
    /// standard output, where Lambda hands it to CloudWatch Logs (which
    /// makes the metrics).
    pub fn print_emf(&self, stage: &str, function: &str) {
        if let Some(line) = self.take_emf(stage, function) {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis());
            println!("{}", line.render(now as u64));
        }
    }

    /// What was counted since the last take, as an EMF line for `function`
    /// in `stage`; `None` when nothing was.
    pub fn take_emf(&self, stage: &str, function: &str) -> Option<EmfLine> {
        self.reported.take(COUNTERS, self, &dimensions(stage, function))
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
        // What the template's alarms are checked against (sluice_domain::emf::DIMENSIONS).
        let published = &value["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(published["Dimensions"], serde_json::json!([sluice_domain::emf::DIMENSIONS]));
        assert_eq!((value["Stage"].as_str(), value["Function"].as_str()), (Some("prod"), Some("fetch")));
        assert!(metrics.take_emf("prod", "fetch").is_none(), "taken once");
        // The running totals keep counting for /metrics.
        StepMetrics::add(&metrics.cafe24_calls, 2);
        assert_eq!((COUNTERS[0].labels, COUNTERS[0].get(&metrics)), (CAFE24, 5));
        let line = metrics.take_emf("prod", "fetch").unwrap().render(1);
        let value: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(value["UpstreamCalls"].as_f64(), Some(2.0), "only what was added since: {line}");
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
