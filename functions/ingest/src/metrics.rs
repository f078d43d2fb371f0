//! Ingest's counts as CloudWatch EMF: after each request the function
//! prints one line with what changed since the previous one (the metrics
//! [`COUNTERS`] names), dimensions `Stage` and `Function`. A warm execution
//! environment serves requests one at a time, so each line is that request's.

use sluice_domain::emf::{EmfLine, Reported, dimensions};
use sluice_ingest::Counters;
use sluice_ingest::counters::COUNTERS;
use std::sync::Arc;

/// The `Function` dimension of ingest's metrics (alarms and the dashboard
/// name it; `tests/tests/template_metrics.rs` checks they do so rightly).
pub const FUNCTION: &str = "ingest";

/// Reports the counters' growth since its last report (the first report
/// carries all counted so far, so no count is lost).
#[derive(Debug)]
pub struct EmfReporter {
    counters: Arc<Counters>,
    reported: Reported,
    stage: String,
}

impl EmfReporter {
    pub fn new(counters: Arc<Counters>, stage: impl Into<String>) -> Self {
        Self { counters, reported: Reported::default(), stage: stage.into() }
    }

    /// The growth since the last call, as an EMF line; `None` when nothing changed.
    pub fn take(&self) -> Option<EmfLine> {
        self.reported.take(COUNTERS, &self.counters, &dimensions(&self.stage, FUNCTION))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_counted_reports_nothing() {
        assert!(EmfReporter::new(Arc::default(), "prod").take().is_none());
    }
}
