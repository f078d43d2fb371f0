//! What ingest has counted, wherever it runs: its counters in this process,
//! or, with the functions as processes, the sums of the EMF lines its
//! processes printed (`EventsReceived`, …: what CloudWatch would show).

use crate::dev_stack::DevStack;

/// Requests ingest has answered, by outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IngestCounts {
    pub received: u64,
    pub enqueued: u64,
    pub coalesced: u64,
    /// Into a mall's dirty set (flow control).
    pub deferred: u64,
    pub duplicates: u64,
    pub rejected: u64,
}

impl IngestCounts {
    pub fn of(stack: &DevStack) -> Self {
        match &stack.functions {
            Some(functions) => {
                let metric = |name: &str| functions.metrics().total("ingest", name) as u64;
                Self {
                    received: metric("EventsReceived"),
                    enqueued: metric("EventsEnqueued"),
                    coalesced: metric("EventsCoalesced"),
                    deferred: metric("EventsDeferred"),
                    duplicates: metric("EventsDuplicate"),
                    rejected: metric("EventsRejected"),
                }
            }
            None => {
                let counts = stack.ingest.snapshot();
                Self {
                    received: counts.received,
                    enqueued: counts.enqueued,
                    coalesced: counts.coalesced,
                    deferred: counts.deferred,
                    duplicates: counts.duplicates,
                    rejected: counts.rejected.total(),
                }
            }
        }
    }
}
