//! Running totals over every execution the endpoint ran, remembered or
//! not: what an AWS bill counts for Step Functions (executions, state
//! transitions, duration) and the Lambda invocations its Task states made.
//! The benchmarks read them to put a cost on one webhook.

use sluice_asl::Execution;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The totals, shared between the endpoint and whoever reads them.
#[derive(Debug, Default)]
pub struct ExecutionTotals {
    executions: AtomicU64,
    state_transitions: AtomicU64,
    task_invocations: AtomicU64,
    duration_ms: AtomicU64,
}

/// The totals at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExecutionCounts {
    pub executions: u64,
    /// States entered (what Standard workflows are billed by).
    pub state_transitions: u64,
    /// Task states that called a function: one Lambda invocation each.
    pub task_invocations: u64,
    /// Summed wall time from start to end (what Express workflows are
    /// billed by, with the requests), Wait states included.
    pub duration_ms: u64,
}

impl ExecutionCounts {
    /// What happened between `before` and these counts.
    pub fn since(self, before: Self) -> Self {
        Self {
            executions: self.executions - before.executions,
            state_transitions: self.state_transitions - before.state_transitions,
            task_invocations: self.task_invocations - before.task_invocations,
            duration_ms: self.duration_ms - before.duration_ms,
        }
    }
}

impl ExecutionTotals {
    pub(super) fn add(&self, execution: &Execution, took: Duration) {
        let tasks = execution
            .history
            .iter()
            .filter(|e| matches!(e.event_type.name(), "TaskScheduled" | "LambdaFunctionScheduled"))
            .count();
        self.executions.fetch_add(1, Ordering::Relaxed);
        self.state_transitions.fetch_add(execution.state_transitions() as u64, Ordering::Relaxed);
        self.task_invocations.fetch_add(tasks as u64, Ordering::Relaxed);
        self.duration_ms.fetch_add(took.as_millis() as u64, Ordering::Relaxed);
    }

    pub fn counts(&self) -> ExecutionCounts {
        ExecutionCounts {
            executions: self.executions.load(Ordering::Relaxed),
            state_transitions: self.state_transitions.load(Ordering::Relaxed),
            task_invocations: self.task_invocations.load(Ordering::Relaxed),
            duration_ms: self.duration_ms.load(Ordering::Relaxed),
        }
    }
}
