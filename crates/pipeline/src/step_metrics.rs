//! What the steps count for CloudWatch: upstream calls and 429s per
//! upstream, quota and budget waits, sheet rows buffered and appended, how
//! long flushes take, and the pipe batches planned. Counted in process as
//! running totals: `sluice dev` serves them at `GET /metrics`
//! ([`StepMetrics::totals`]); a function prints what each invocation added
//! as one EMF line ([`StepMetrics::take_emf`]), so each count reaches
//! CloudWatch once.

use sluice_domain::emf::{EmfLine, Unit};
use std::sync::Mutex;
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
    /// The totals the last EMF line reported.
    reported: Mutex<[u64; COUNTERS]>,
}

const COUNTERS: usize = 12;

/// One counter's running total, under its Prometheus name (without a
/// prefix or the `_total` suffix) and labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Total {
    pub name: &'static str,
    pub labels: &'static str,
    pub value: u64,
}

impl StepMetrics {
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    fn values(&self) -> [u64; COUNTERS] {
        [
            &self.cafe24_calls,
            &self.cafe24_429,
            &self.sheets_calls,
            &self.sheets_429,
            &self.limiter_waits,
            &self.limiter_wait_ms,
            &self.rows_buffered,
            &self.rows_appended,
            &self.flush_ms,
            &self.batch_messages,
            &self.batch_groups,
            &self.redelivered,
        ]
        .map(|c| c.load(Ordering::Relaxed))
    }

    /// The running totals since the process started.
    pub fn totals(&self) -> [Total; COUNTERS] {
        let v = self.values();
        let total = |name, labels, value| Total { name, labels, value };
        [
            total("upstream_calls", "{upstream=\"cafe24\"}", v[0]),
            total("upstream_429", "{upstream=\"cafe24\"}", v[1]),
            total("upstream_calls", "{upstream=\"sheets\"}", v[2]),
            total("upstream_429", "{upstream=\"sheets\"}", v[3]),
            total("limiter_waits", "", v[4]),
            total("limiter_wait_ms", "", v[5]),
            total("sheet_rows_buffered", "", v[6]),
            total("sheet_rows_appended", "", v[7]),
            total("flush_ms", "", v[8]),
            total("pipe_batch_messages", "", v[9]),
            total("pipe_batch_groups", "", v[10]),
            total("redelivered", "", v[11]),
        ]
    }

    /// Prints what was counted since the last call as one EMF line on
    /// standard output, where Lambda hands it to CloudWatch Logs (which
    /// makes the metrics). The stage comes from `SLUICE_STAGE` (`local`
    /// without it).
    pub fn print_emf(&self, function: &str) {
        let stage = std::env::var("SLUICE_STAGE").unwrap_or_else(|_| "local".into());
        if let Some(line) = self.take_emf(&stage, function) {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis());
            println!("{}", line.render(now as u64));
        }
    }

    /// What was counted since the last take, as an EMF line for `function`
    /// in `stage`; `None` when nothing was.
    pub fn take_emf(&self, stage: &str, function: &str) -> Option<EmfLine> {
        let now = self.values();
        let d: [f64; COUNTERS] = {
            let mut reported = self.reported.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            let delta = std::array::from_fn(|i| now[i].saturating_sub(reported[i]) as f64);
            *reported = now;
            delta
        };
        let mut line = EmfLine::new(&[("Stage", stage), ("Function", function)]);
        line.add("UpstreamCalls", Unit::Count, d[0] + d[2])
            .add("Upstream429", Unit::Count, d[1] + d[3])
            .add("Cafe24Throttled", Unit::Count, d[1])
            .add("SheetsThrottled", Unit::Count, d[3])
            .add("LimiterWaits", Unit::Count, d[4])
            .add("LimiterWaitTime", Unit::Milliseconds, d[5])
            .add("SheetRowsBuffered", Unit::Count, d[6])
            .add("SheetRowsAppended", Unit::Count, d[7])
            .add("FlushTime", Unit::Milliseconds, d[8])
            .add("PipeBatchSize", Unit::Count, d[9])
            .add("PipeBatchGroups", Unit::Count, d[10])
            .add("Redelivered", Unit::Count, d[11]);
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
        // The running totals keep counting for /metrics.
        StepMetrics::add(&metrics.cafe24_calls, 2);
        let cafe24 = metrics.totals()[0];
        assert_eq!((cafe24.name, cafe24.value), ("upstream_calls", 5));
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
