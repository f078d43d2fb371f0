//! The executions the endpoint remembers, for DescribeExecution,
//! GetExecutionHistory and ListExecutions: the most recent ones started,
//! up to the store's capacity and its byte budget, the oldest forgotten
//! first (a running one too: it runs on, but can no longer be looked up).
//! Caps rather than a TTL, so memory is bounded however fast executions
//! come; the byte budget because a history holds every state's input and
//! output, so its size follows the events' (a sender's rows or webhooks),
//! and a count alone would let large inputs take gigabytes. Memory, not
//! Redis: a restart of `sluice dev` forgets them, as AWS forgets an
//! Express execution once it has ended (there only its logs keep it).

use super::totals::ExecutionTotals;
use serde_json::Value;
use sluice_asl::{EventType, Execution, Outcome};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

/// One execution, from its start.
#[derive(Debug)]
pub(super) struct ExecutionRecord {
    pub(super) arn: String,
    pub(super) name: String,
    pub(super) machine_arn: String,
    /// The input as the caller sent it (Step Functions answers it back
    /// unchanged).
    pub(super) input: String,
    pub(super) started: SystemTime,
    progress: Mutex<Progress>,
    /// What it takes in memory, about (see [`approx_bytes`]).
    bytes: AtomicUsize,
}

/// Where an execution is.
#[derive(Debug, Clone)]
pub(super) enum Progress {
    Running,
    Ended { execution: Arc<Execution>, stopped: SystemTime },
}

/// An execution's status, as Step Functions names it.
pub(super) fn status(execution: &Execution) -> &'static str {
    let timed_out = execution.history.last().is_some_and(|e| e.event_type == EventType::ExecutionTimedOut);
    match &execution.outcome {
        Outcome::Succeeded(_) => "SUCCEEDED",
        Outcome::Failed { .. } if timed_out => "TIMED_OUT",
        Outcome::Failed { .. } => "FAILED",
    }
}

impl ExecutionRecord {
    pub(super) fn new(arn: String, name: String, machine_arn: String, input: String) -> Self {
        let bytes = AtomicUsize::new(input.len() + arn.len() + name.len() + machine_arn.len());
        Self {
            arn,
            name,
            machine_arn,
            input,
            started: SystemTime::now(),
            progress: Mutex::new(Progress::Running),
            bytes,
        }
    }

    pub(super) fn progress(&self) -> Progress {
        self.progress.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn end(&self, execution: Execution) {
        let ended = Progress::Ended { execution: Arc::new(execution), stopped: SystemTime::now() };
        *self.progress.lock().unwrap_or_else(PoisonError::into_inner) = ended;
    }
}

/// About what `value` takes in memory: every node's own size with the
/// allocator's and the map's overhead, and its text. An estimate for a
/// budget, not an account: with the default budget full of pipeline
/// histories, sluice dev's RSS was about twice the budget, other work
/// included.
pub(super) fn approx_bytes(value: &Value) -> usize {
    const NODE: usize = 64;
    NODE + match value {
        Value::String(s) => s.len() + 16,
        Value::Array(items) => items.iter().map(approx_bytes).sum(),
        Value::Object(map) => map.iter().map(|(k, v)| NODE + k.len() + approx_bytes(v)).sum(),
        Value::Null | Value::Bool(_) | Value::Number(_) => 0,
    }
}

fn execution_bytes(execution: &Execution) -> usize {
    let value = |v: &Option<Value>| v.as_ref().map_or(0, approx_bytes);
    execution.history.iter().map(|e| 128 + value(&e.details.input) + value(&e.details.output)).sum()
}

/// The remembered executions, by ARN.
#[derive(Debug)]
pub(super) struct ExecutionStore {
    capacity: usize,
    max_bytes: usize,
    inner: Mutex<Remembered>,
    /// Every execution's counts, forgotten or not.
    pub(super) totals: Arc<ExecutionTotals>,
}

#[derive(Debug, Default)]
struct Remembered {
    by_arn: HashMap<String, Arc<ExecutionRecord>>,
    /// ARNs, oldest first.
    order: VecDeque<String>,
    /// The remembered executions' bytes, about.
    bytes: usize,
}

impl Remembered {
    /// Forgets the oldest while over either cap, keeping the newest.
    fn trim(&mut self, capacity: usize, max_bytes: usize) {
        while self.order.len() > capacity || (self.bytes > max_bytes && self.order.len() > 1) {
            let Some(oldest) = self.order.pop_front() else { break };
            if let Some(record) = self.by_arn.remove(&oldest) {
                self.bytes = self.bytes.saturating_sub(record.bytes.load(Ordering::Relaxed));
            }
        }
    }
}

impl ExecutionStore {
    /// A store that remembers the last `capacity` executions (at least
    /// one) within about `max_bytes` of memory (the newest whatever its size).
    pub(super) fn new(capacity: usize, max_bytes: usize) -> Self {
        Self { capacity: capacity.max(1), max_bytes, inner: Mutex::default(), totals: Arc::default() }
    }

    pub(super) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Remembers `record`, forgetting the oldest beyond the capacity. When
    /// an execution of the same ARN is remembered already, `record` is not
    /// taken: the error holds that execution, and `record` back.
    #[allow(clippy::result_large_err)] // the record comes back to its caller at once
    pub(super) fn insert(
        &self,
        record: ExecutionRecord,
    ) -> Result<Arc<ExecutionRecord>, (Arc<ExecutionRecord>, ExecutionRecord)> {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(existing) = inner.by_arn.get(&record.arn) {
            return Err((existing.clone(), record));
        }
        let record = Arc::new(record);
        inner.order.push_back(record.arn.clone());
        inner.by_arn.insert(record.arn.clone(), record.clone());
        inner.bytes += record.bytes.load(Ordering::Relaxed);
        inner.trim(self.capacity, self.max_bytes);
        Ok(record)
    }

    /// Records `record`'s end, counting its history against the budget.
    pub(super) fn end(&self, record: &ExecutionRecord, execution: Execution) {
        let added = execution_bytes(&execution);
        self.totals.add(&execution, record.started.elapsed().unwrap_or_default());
        record.end(execution);
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        record.bytes.fetch_add(added, Ordering::Relaxed);
        // Only a record still remembered counts; a forgotten one is gone.
        if inner.by_arn.get(&record.arn).is_some_and(|r| std::ptr::eq(&**r, record)) {
            inner.bytes += added;
            inner.trim(self.capacity, self.max_bytes);
        }
    }

    pub(super) fn get(&self, arn: &str) -> Option<Arc<ExecutionRecord>> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner).by_arn.get(arn).cloned()
    }

    /// The remembered executions, newest first (as ListExecutions lists them).
    pub(super) fn newest_first(&self) -> Vec<Arc<ExecutionRecord>> {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.order.iter().rev().filter_map(|arn| inner.by_arn.get(arn).cloned()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(n: usize) -> ExecutionRecord {
        ExecutionRecord::new(format!("arn-{n}"), format!("e-{n}"), "m".into(), "{}".into())
    }

    #[test]
    fn the_oldest_is_forgotten_beyond_the_capacity() {
        let store = ExecutionStore::new(3, usize::MAX);
        for n in 0..5 {
            store.insert(record(n)).unwrap();
        }
        let names: Vec<String> = store.newest_first().iter().map(|r| r.name.clone()).collect();
        assert_eq!(names, ["e-4", "e-3", "e-2"]);
        assert!(store.get("arn-0").is_none() && store.get("arn-1").is_none());
        assert_eq!(store.get("arn-4").unwrap().name, "e-4");
    }

    #[test]
    fn a_remembered_arn_is_not_replaced() {
        let store = ExecutionStore::new(3, usize::MAX);
        store.insert(record(1)).unwrap();
        let again = store.insert(ExecutionRecord::new("arn-1".into(), "other".into(), "m".into(), "[]".into()));
        let (existing, refused) = again.unwrap_err();
        assert_eq!((existing.name.as_str(), refused.name.as_str()), ("e-1", "other"));
        assert_eq!(store.newest_first().len(), 1);
    }

    #[test]
    fn large_histories_are_forgotten_beyond_the_byte_budget() {
        let big = || serde_json::json!({"rows": vec!["x".repeat(1000); 100]});
        let per_execution = approx_bytes(&big()) * 2;
        let store = ExecutionStore::new(100, per_execution * 3);
        for n in 0..6 {
            let record = store.insert(record(n)).unwrap();
            let event = sluice_asl::HistoryEvent {
                id: 1,
                previous_event_id: 0,
                timestamp: SystemTime::now(),
                event_type: EventType::ExecutionStarted,
                details: sluice_asl::EventDetails { input: Some(big()), output: Some(big()), ..Default::default() },
            };
            store.end(&record, Execution { outcome: Outcome::Succeeded(Value::Null), history: vec![event] });
        }
        let names: Vec<String> = store.newest_first().iter().map(|r| r.name.clone()).collect();
        assert!((1..=3).contains(&names.len()), "{names:?}");
        assert_eq!(names[0], "e-5", "the newest is kept");
        let inner = store.inner.lock().unwrap();
        assert!(inner.bytes <= per_execution * 3, "{} bytes remembered", inner.bytes);
    }
}
