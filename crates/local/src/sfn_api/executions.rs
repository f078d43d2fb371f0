//! The executions the endpoint remembers, for DescribeExecution,
//! GetExecutionHistory and ListExecutions: the most recent ones started,
//! up to the store's capacity, the oldest forgotten first (a running one
//! too: it runs on, but can no longer be looked up). A cap rather than a
//! TTL, so memory is bounded however fast executions come. Memory, not
//! Redis: a restart of `sluice dev` forgets them, as AWS forgets an
//! Express execution once it has ended (there only its logs keep it).

use sluice_asl::{EventType, Execution, Outcome};
use std::collections::{HashMap, VecDeque};
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
        Self { arn, name, machine_arn, input, started: SystemTime::now(), progress: Mutex::new(Progress::Running) }
    }

    pub(super) fn progress(&self) -> Progress {
        self.progress.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Records the end; returns it, as it is now remembered.
    pub(super) fn end(&self, execution: Execution) -> Arc<Execution> {
        let execution = Arc::new(execution);
        let ended = Progress::Ended { execution: execution.clone(), stopped: SystemTime::now() };
        *self.progress.lock().unwrap_or_else(PoisonError::into_inner) = ended;
        execution
    }
}

/// The remembered executions, by ARN.
#[derive(Debug)]
pub(super) struct ExecutionStore {
    capacity: usize,
    inner: Mutex<Remembered>,
}

#[derive(Debug, Default)]
struct Remembered {
    by_arn: HashMap<String, Arc<ExecutionRecord>>,
    /// ARNs, oldest first.
    order: VecDeque<String>,
}

impl ExecutionStore {
    /// A store that remembers the last `capacity` executions (at least one).
    pub(super) fn new(capacity: usize) -> Self {
        Self { capacity: capacity.max(1), inner: Mutex::default() }
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
        while inner.order.len() > self.capacity {
            if let Some(oldest) = inner.order.pop_front() {
                inner.by_arn.remove(&oldest);
            }
        }
        Ok(record)
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
        let store = ExecutionStore::new(3);
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
        let store = ExecutionStore::new(3);
        store.insert(record(1)).unwrap();
        let again = store.insert(ExecutionRecord::new("arn-1".into(), "other".into(), "m".into(), "[]".into()));
        let (existing, refused) = again.unwrap_err();
        assert_eq!((existing.name.as_str(), refused.name.as_str()), ("e-1", "other"));
        assert_eq!(store.newest_first().len(), 1);
    }
}
