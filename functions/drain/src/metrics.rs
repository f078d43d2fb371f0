//! What the drain function reports to CloudWatch: after each invocation
//! one EMF line (namespace `Sluice`, dimensions `Stage` and `Function`
//! like every function's) with what that run moved, from [`COUNTERS`],
//! and [`LAG`], the age of the oldest snapshot the database does not have
//! yet, measured after the run. The lag is what the template alarms on:
//! it grows whether the drain fails, falls behind, or is not running.

use sluice_domain::emf::Unit::{Count, Seconds};
use sluice_domain::emf::{Counter, EmfLine, Reported, dimensions};
use sluice_sink::PassReport;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// The `Function` dimension of the drain's metrics: the name its `main`
/// gives `serve_step` (alarms and the dashboard name it;
/// `tests/tests/template_metrics.rs` checks they do so rightly).
pub const FUNCTION: &str = "drain";

/// Seconds since the oldest entry no drain has committed was appended;
/// absent when the database has everything (a zero is left out of EMF).
pub const LAG: &str = "DrainLag";

/// What the drain runs moved, summed.
#[derive(Debug, Default)]
pub struct DrainMetrics {
    taken: AtomicU64,
    written: AtomicU64,
    superseded: AtomicU64,
    unreadable: AtomicU64,
    trimmed: AtomicU64,
    /// The lag measured after the latest run, until it is printed.
    lag: Mutex<Option<Duration>>,
    reported: Reported,
}

/// Every count, under its `/metrics` name and the EMF metric it adds to.
pub const COUNTERS: &[Counter<DrainMetrics>] = &[
    Counter::new("drain_entries_taken", "", &[("DrainEntriesTaken", Count)], |m| &m.taken),
    Counter::new("drain_rows_written", "", &[("DrainRowsWritten", Count)], |m| &m.written),
    Counter::new("drain_rows_superseded", "", &[("DrainRowsSuperseded", Count)], |m| &m.superseded),
    Counter::new("drain_entries_unreadable", "", &[("DrainEntriesUnreadable", Count)], |m| &m.unreadable),
    Counter::new("drain_entries_trimmed", "", &[("DrainEntriesTrimmed", Count)], |m| &m.trimmed),
];

/// Every metric name the function can emit: the counters' and [`LAG`].
pub fn metric_names() -> Vec<&'static str> {
    COUNTERS.iter().flat_map(|c| c.emf.iter().map(|(name, _)| *name)).chain([LAG]).collect()
}

impl DrainMetrics {
    /// Counts what one run did.
    pub fn record(&self, report: &PassReport) {
        for (counter, n) in [
            (&self.taken, report.taken),
            (&self.written, report.written),
            (&self.superseded, report.superseded),
            (&self.unreadable, report.unreadable),
            (&self.trimmed, report.trimmed),
        ] {
            counter.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// The lag after the latest run (`None`: nothing waits).
    pub fn set_lag(&self, lag: Option<Duration>) {
        *self.lag.lock().unwrap_or_else(PoisonError::into_inner) = lag;
    }

    /// What changed since the last take, and the lag, as one EMF line for
    /// `function` in `stage`; `None` when there is nothing to report.
    pub fn take_emf(&self, stage: &str, function: &str) -> Option<EmfLine> {
        let dimensions = dimensions(stage, function);
        let mut line = self.reported.take(COUNTERS, self, &dimensions).unwrap_or_else(|| EmfLine::new(&dimensions));
        if let Some(lag) = self.lag.lock().unwrap_or_else(PoisonError::into_inner).take() {
            line.add(LAG, Seconds, lag.as_secs_f64());
        }
        (!line.is_empty()).then_some(line)
    }

    /// Prints [`take_emf`](Self::take_emf)'s line on standard output, where
    /// Lambda hands it to CloudWatch Logs.
    pub fn print_emf(&self, stage: &str, function: &str) {
        if let Some(line) = self.take_emf(stage, function) {
            println!("{}", line.render(crate::now_ms()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_and_its_lag_are_reported_once_in_seconds() {
        let metrics = DrainMetrics::default();
        assert!(metrics.take_emf("prod", FUNCTION).is_none(), "nothing yet");
        metrics.record(&PassReport { taken: 5, written: 4, superseded: 1, trimmed: 5, ..PassReport::default() });
        metrics.set_lag(Some(Duration::from_millis(42_500)));
        let line = metrics.take_emf("prod", FUNCTION).unwrap().render(1);
        let value: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!((value["DrainRowsWritten"].as_f64(), value[LAG].as_f64()), (Some(4.0), Some(42.5)));
        assert_eq!((value["Stage"].as_str(), value["Function"].as_str()), (Some("prod"), Some("drain")));
        let units = &value["_aws"]["CloudWatchMetrics"][0]["Metrics"];
        assert!(units.as_array().unwrap().iter().any(|m| m["Name"] == LAG && m["Unit"] == "Seconds"), "{line}");
        assert!(metrics.take_emf("prod", FUNCTION).is_none(), "each count and lag is reported once");
    }

    #[test]
    fn every_name_is_listed_for_the_template_checks() {
        let names = metric_names();
        assert!(names.contains(&LAG) && names.contains(&"DrainRowsWritten"), "{names:?}");
        assert_eq!(names.len(), COUNTERS.len() + 1);
    }
}
