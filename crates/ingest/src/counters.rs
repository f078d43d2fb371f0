//! What ingest has done since it started, as plain atomics: cheap enough
//! for the hot path, readable at any time as a [`CounterSnapshot`]
//! (`sluice dev` prints them), and listed once in [`COUNTERS`], which the
//! ingest Lambda's EMF lines and `sluice dev`'s `GET /metrics` render.
//!
//! Every webhook request is counted once in `received` and, when it is
//! answered, once in exactly one of `enqueued`, `coalesced`, `deferred`,
//! `duplicates` or `rejected` (by reason); so when nothing is in flight,
//! `received == enqueued + coalesced + deferred + duplicates + rejected.total()`.

use crate::acceptance::Status;
use crate::rejection::ErrorCode;
use sluice_domain::emf::Counter;
use sluice_domain::emf::Unit::Count;
use std::sync::atomic::{AtomicU64, Ordering};

/// Live counters of one [`Ingest`](crate::Ingest).
#[derive(Debug, Default)]
pub struct Counters {
    received: AtomicU64,
    enqueued: AtomicU64,
    coalesced: AtomicU64,
    deferred: AtomicU64,
    duplicates: AtomicU64,
    /// By `code as usize`: `ALL` lists every code, so each has its slot.
    rejected: [AtomicU64; ErrorCode::ALL.len()],
    batch_calls: AtomicU64,
    batched_entries: AtomicU64,
    trace_failures: AtomicU64,
}

impl Counters {
    pub(crate) fn received(&self) {
        self.received.fetch_add(1, Ordering::Relaxed);
    }

    /// An accepted webhook or row, by what became of it.
    pub(crate) fn accepted(&self, status: Status) {
        let counter = match status {
            Status::Enqueued => &self.enqueued,
            Status::Coalesced => &self.coalesced,
            Status::Deferred => &self.deferred,
            Status::Duplicate => &self.duplicates,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn rejected(&self, code: ErrorCode) {
        self.rejected[code as usize].fetch_add(1, Ordering::Relaxed);
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
        CounterSnapshot {
            received: get(&self.received),
            enqueued: get(&self.enqueued),
            coalesced: get(&self.coalesced),
            deferred: get(&self.deferred),
            duplicates: get(&self.duplicates),
            rejected: RejectedCounts {
                by_code: self.rejected.each_ref().map(get),
                // The reasons COUNTERS lists, as `/metrics` and EMF show
                // them: the webhook and row routes' refusals, not the 404,
                // 405, 408 and 431 answered outside them.
                total: COUNTERS.iter().filter(|c| c.name == REJECTED).map(|c| c.get(self)).sum(),
            },
            batch_calls: get(&self.batch_calls),
            batched_entries: get(&self.batched_entries),
            trace_failures: get(&self.trace_failures),
        }
    }
}

/// The name of the refusals' counts, one per reason.
const REJECTED: &str = "rejected";

/// One refusal reason: `sluice_ingest_rejected_total{reason="…"}`, and in
/// EMF both `Rejected_<reason>` and the sum of all, `EventsRejected`.
macro_rules! rejected {
    ($code:ident, $reason:ident) => {
        Counter::new(
            REJECTED,
            concat!("{reason=\"", stringify!($reason), "\"}"),
            &[(concat!("Rejected_", stringify!($reason)), Count), ("EventsRejected", Count)],
            |c| &c.rejected[ErrorCode::$code as usize],
        )
    };
}

/// Every count, under its `/metrics` name (`sluice_ingest_<name>_total`)
/// and the EMF metrics it adds to.
pub const COUNTERS: &[Counter<Counters>] = &[
    Counter::new("received", "", &[("EventsReceived", Count)], |c| &c.received),
    Counter::new("enqueued", "", &[("EventsEnqueued", Count)], |c| &c.enqueued),
    Counter::new("coalesced", "", &[("EventsCoalesced", Count)], |c| &c.coalesced),
    Counter::new("deferred", "", &[("EventsDeferred", Count)], |c| &c.deferred),
    Counter::new("duplicates", "", &[("EventsDuplicate", Count)], |c| &c.duplicates),
    rejected!(Unauthorized, unauthorized),
    rejected!(Forbidden, forbidden),
    rejected!(PayloadTooLarge, payload_too_large),
    rejected!(InvalidJson, invalid_json),
    rejected!(InvalidField, invalid_field),
    rejected!(UnknownTopic, unknown_topic),
    rejected!(UnknownTenant, unknown_tenant),
    rejected!(QueueRefused, queue_refused),
    rejected!(QueueUnavailable, queue_unavailable),
    rejected!(StoreUnavailable, store_unavailable),
    rejected!(DeliveryInProgress, delivery_in_progress),
    rejected!(Overloaded, overloaded),
    rejected!(DeadlineExceeded, deadline_exceeded),
    Counter::new("batch_calls", "", &[("QueueBatchCalls", Count)], |c| &c.batch_calls),
    Counter::new("batched_entries", "", &[("QueueBatchedEntries", Count)], |c| &c.batched_entries),
    // Only in `/metrics`; each failed write is also logged as a warning.
    Counter::new("trace_failures", "", &[], |c| &c.trace_failures),
];

/// The counters at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CounterSnapshot {
    /// Webhook requests (`POST /webhooks/cafe24`), good or bad.
    pub received: u64,
    /// Accepted and taken by the queue.
    pub enqueued: u64,
    /// Accepted and joined to a pending fetch of the same resource.
    pub coalesced: u64,
    /// Accepted into its mall's dirty set (flow control).
    pub deferred: u64,
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

/// Refused webhook requests, by [`ErrorCode`] (`rejected[code]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RejectedCounts {
    by_code: [u64; ErrorCode::ALL.len()],
    total: u64,
}

impl RejectedCounts {
    /// Every refusal a route counted: the sum of the reasons [`COUNTERS`] lists.
    pub fn total(&self) -> u64 {
        self.total
    }
}

impl std::ops::Index<ErrorCode> for RejectedCounts {
    type Output = u64;

    fn index(&self, code: ErrorCode) -> &u64 {
        &self.by_code[code as usize]
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
        assert_eq!(snapshot.rejected[ErrorCode::InvalidField], 2);
        assert_eq!(snapshot.rejected[ErrorCode::UnknownTopic], 1);
        // not_found, method_not_allowed, header_too_large and
        // request_timeout are not webhook outcomes.
        assert_eq!(snapshot.rejected.total(), 14);
    }

    #[test]
    fn emf_reports_what_grew_per_reason_and_in_all() {
        let counters = Counters::default();
        let reported = sluice_domain::emf::Reported::default();
        (0..3).for_each(|_| counters.received());
        (0..2).for_each(|_| counters.accepted(Status::Enqueued));
        counters.accepted(Status::Coalesced);
        counters.rejected(ErrorCode::InvalidField);
        let line = reported.take(COUNTERS, &counters, &[]).unwrap().render(1);
        let line: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(line["EventsReceived"], 3.0);
        assert_eq!(line["EventsEnqueued"], 2.0);
        assert_eq!(line["EventsCoalesced"], 1.0);
        assert_eq!(line["Rejected_invalid_field"], 1.0);
        assert_eq!(line["EventsRejected"], 1.0);
        assert!(line.get("EventsDuplicate").is_none());
    }
}
