//! Ingest's counts as CloudWatch EMF: after each request the function
//! prints one line with what changed since the previous one (events
//! received, enqueued, coalesced, duplicates, rejected in all and per
//! reason, batch sends and their entries), dimensions `Stage` and
//! `Function`. A warm execution environment serves requests one at a time,
//! so each line is that request's.

use serde_json::Value;
use sluice_domain::emf::{EmfLine, Unit};
use sluice_ingest::{CounterSnapshot, Counters};
use std::sync::{Arc, Mutex, PoisonError};

/// Reports the counters' growth since its last report.
#[derive(Debug)]
pub struct EmfReporter {
    counters: Arc<Counters>,
    last: Mutex<CounterSnapshot>,
    stage: String,
}

impl EmfReporter {
    pub fn new(counters: Arc<Counters>, stage: impl Into<String>) -> Self {
        let last = Mutex::new(counters.snapshot());
        Self { counters, last, stage: stage.into() }
    }

    /// The growth since the last call, as an EMF line; `None` when nothing changed.
    pub fn take(&self) -> Option<EmfLine> {
        let now = self.counters.snapshot();
        let before = std::mem::replace(&mut *self.last.lock().unwrap_or_else(PoisonError::into_inner), now);
        delta(&before, &now, &self.stage)
    }
}

/// What grew from `before` to `now`.
pub fn delta(before: &CounterSnapshot, now: &CounterSnapshot, stage: &str) -> Option<EmfLine> {
    let (before, now) = (serde_json::to_value(before).ok()?, serde_json::to_value(now).ok()?);
    let grew = |a: &Value, b: &Value| (b.as_u64().unwrap_or(0).saturating_sub(a.as_u64().unwrap_or(0))) as f64;
    let mut line = EmfLine::new(&[("Stage", stage), ("Function", "ingest")]);
    for (field, name) in [
        ("received", "EventsReceived"),
        ("enqueued", "EventsEnqueued"),
        ("coalesced", "EventsCoalesced"),
        ("duplicates", "EventsDuplicate"),
        ("batch_calls", "QueueBatchCalls"),
        ("batched_entries", "QueueBatchedEntries"),
    ] {
        line.add(name, Unit::Count, grew(&before[field], &now[field]));
    }
    let mut rejected = 0.0;
    for (reason, count) in now["rejected"].as_object().into_iter().flatten() {
        let n = grew(&before["rejected"][reason], count);
        rejected += n;
        line.add(&format!("Rejected_{reason}"), Unit::Count, n);
    }
    line.add("EventsRejected", Unit::Count, rejected);
    (!line.is_empty()).then_some(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_grew_is_reported() {
        let before = CounterSnapshot { received: 5, enqueued: 4, ..CounterSnapshot::default() };
        let mut now = CounterSnapshot { received: 8, enqueued: 6, coalesced: 1, ..CounterSnapshot::default() };
        now.rejected.invalid_field = 1;
        let line: Value = serde_json::from_str(&delta(&before, &now, "prod").unwrap().render(1)).unwrap();
        assert_eq!(line["EventsReceived"], 3.0);
        assert_eq!(line["EventsEnqueued"], 2.0);
        assert_eq!(line["EventsCoalesced"], 1.0);
        assert_eq!(line["Rejected_invalid_field"], 1.0);
        assert_eq!(line["EventsRejected"], 1.0);
        assert!(line.get("EventsDuplicate").is_none());
        assert!(delta(&now, &now, "prod").is_none(), "nothing grew");
    }
}
