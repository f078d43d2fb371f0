//! What a drain pass did, counted: the drain function's answer and
//! what `sluice dev` logs.

/// What one pass (or several, summed) did; the drain function answers it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PassReport {
    /// Entries taken from the stream (own pending, claimed or new).
    pub taken: u64,
    /// Of those, taken over from another consumer.
    pub claimed: u64,
    /// Rows inserted or replaced.
    pub written: u64,
    /// Snapshots older than (or as old as) what the table held.
    pub superseded: u64,
    /// Entries an earlier pass already committed (it died before the
    /// acknowledgement, or was slower than `claim_idle`): acknowledged,
    /// nothing written or recorded again.
    pub redelivered: u64,
    /// Outcome entries (events dead-lettered) recorded in the event log.
    pub dead_lettered: u64,
    /// Entries kept as unreadable.
    pub unreadable: u64,
    /// Entries acknowledged.
    pub acked: u64,
    /// Entries trimmed from the streams.
    pub trimmed: u64,
}

impl PassReport {
    pub(crate) fn add(&mut self, other: PassReport) {
        self.taken += other.taken;
        self.claimed += other.claimed;
        self.written += other.written;
        self.superseded += other.superseded;
        self.redelivered += other.redelivered;
        self.dead_lettered += other.dead_lettered;
        self.unreadable += other.unreadable;
        self.acked += other.acked;
        self.trimmed += other.trimmed;
    }
}
