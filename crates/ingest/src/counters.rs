//! What ingest has done since it started, as plain atomics: cheap enough
//! for the hot path, readable at any time as a [`CounterSnapshot`]
//! (`sluice dev` prints them; the metrics exporter publishes them).
//!
//! Every webhook request is counted once in `received` and, when it is
//! answered, once in exactly one of `enqueued`, `coalesced`, `duplicates` or
//! `rejected` (by reason); so when nothing is in flight,
//! `received == enqueued + coalesced + duplicates + rejected.total()`.

use crate::rejection::ErrorCode;
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};

/// Live counters of one [`Ingest`](crate::Ingest).
#[derive(Debug, Default)]
pub struct Counters {
    received: AtomicU64,
    enqueued: AtomicU64,
    coalesced: AtomicU64,
    duplicates: AtomicU64,
    rejected: [AtomicU64; ErrorCode::ALL.len()],
    batch_calls: AtomicU64,
    batched_entries: AtomicU64,
    trace_failures: AtomicU64,
}

impl Counters {
    pub(crate) fn received(&self) {
        self.received.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn enqueued(&self) {
        self.enqueued.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn coalesced(&self) {
        self.coalesced.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn duplicate(&self) {
        self.duplicates.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn rejected(&self, code: ErrorCode) {
        self.rejected[index(code)].fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn batch(&self, entries: usize) {
        self.batch_calls.fetch_add(1, Ordering::Relaxed);
        self.batched_entries.fetch_add(entries as u64, Ordering::Relaxed);
    }

    pub(crate) fn trace_failed(&self) {
        self.trace_failures.fetch_add(1, Ordering::Relaxed);
    }

    /// The counters now. Each is read on its own, so a snapshot taken while
    /// requests run may be mid-way through one.
    pub fn snapshot(&self) -> CounterSnapshot {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let rejected = |code| get(&self.rejected[index(code)]);
        CounterSnapshot {
            received: get(&self.received),
            enqueued: get(&self.enqueued),
            coalesced: get(&self.coalesced),
            duplicates: get(&self.duplicates),
            rejected: RejectedCounts {
                unauthorized: rejected(ErrorCode::Unauthorized),
                payload_too_large: rejected(ErrorCode::PayloadTooLarge),
                invalid_json: rejected(ErrorCode::InvalidJson),
                invalid_field: rejected(ErrorCode::InvalidField),
                unknown_topic: rejected(ErrorCode::UnknownTopic),
                queue_refused: rejected(ErrorCode::QueueRefused),
                queue_unavailable: rejected(ErrorCode::QueueUnavailable),
                store_unavailable: rejected(ErrorCode::StoreUnavailable),
                delivery_in_progress: rejected(ErrorCode::DeliveryInProgress),
            },
            batch_calls: get(&self.batch_calls),
            batched_entries: get(&self.batched_entries),
            trace_failures: get(&self.trace_failures),
        }
    }
}

fn index(code: ErrorCode) -> usize {
    ErrorCode::ALL.iter().position(|c| *c == code).unwrap_or_else(|| unreachable!("ALL lists every code"))
}

/// The counters at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct CounterSnapshot {
    /// Webhook requests (`POST /webhooks/cafe24`), good or bad.
    pub received: u64,
    /// Accepted and taken by the queue.
    pub enqueued: u64,
    /// Accepted and joined to a pending fetch of the same resource.
    pub coalesced: u64,
    /// Redeliveries of an event already accepted.
    pub duplicates: u64,
    pub rejected: RejectedCounts,
    /// Batch sends made, and the entries they carried: entries / calls is
    /// the mean batch size.
    pub batch_calls: u64,
    pub batched_entries: u64,
    /// Trace entries that could not be written (the request was still
    /// answered by what the queue and gates did).
    pub trace_failures: u64,
}

/// Refused webhook requests, by [`ErrorCode`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct RejectedCounts {
    pub unauthorized: u64,
    pub payload_too_large: u64,
    pub invalid_json: u64,
    pub invalid_field: u64,
    pub unknown_topic: u64,
    pub queue_refused: u64,
    pub queue_unavailable: u64,
    pub store_unavailable: u64,
    pub delivery_in_progress: u64,
}

impl RejectedCounts {
    pub fn total(&self) -> u64 {
        self.unauthorized
            + self.payload_too_large
            + self.invalid_json
            + self.invalid_field
            + self.unknown_topic
            + self.queue_refused
            + self.queue_unavailable
            + self.store_unavailable
            + self.delivery_in_progress
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_rejection_lands_in_its_own_count() {
        let counters = Counters::default();
        for code in ErrorCode::ALL {
            counters.rejected(code);
        }
        counters.rejected(ErrorCode::InvalidField);
        let snapshot = counters.snapshot();
        assert_eq!(snapshot.rejected.invalid_field, 2);
        assert_eq!(snapshot.rejected.unknown_topic, 1);
        // not_found and method_not_allowed are not webhook outcomes.
        assert_eq!(snapshot.rejected.total(), 10);
    }
}
