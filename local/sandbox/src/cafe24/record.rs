//! What the sandbox remembers about every call it answered, and counters.
//!
//! A record carries the bucket level just before and just after the call
//! and the time on the sandbox's clock, so a test can assert that no call
//! was refused and can replay the bucket level over time.

use crate::fault::{Fault, TimeoutMode};
use serde::Serialize;
use std::collections::VecDeque;
use std::time::Duration;

/// The path of the token endpoint (after the mall prefix).
pub const TOKEN_PATH: &str = "/api/v2/oauth/token";

/// Why a call got 429.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Refusal {
    /// The request bucket was full; the call was not counted in it.
    Bucket,
    /// The usage quota was spent.
    Quota,
    /// A 429 storm injected through the control plane (every call of the
    /// mall refused for a while, with `Retry-After`).
    Storm,
}

/// One call to the sandbox's Cafe24 API (the control plane is not
/// recorded).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallRecord {
    /// Position in the sandbox's life, from 1.
    pub seq: u64,
    /// When the call was decided, on the sandbox's clock (since start).
    #[serde(rename = "at_secs", serialize_with = "crate::control_plane::secs")]
    pub at: Duration,
    pub mall_id: String,
    pub method: String,
    /// The path after the mall prefix, e.g. `/api/v2/admin/products/17`.
    pub path: String,
    /// The status answered (for a held timeout, the 504 sent after the hold;
    /// for a dropped connection, the status line sent before the drop).
    pub status: u16,
    pub bucket_before: f64,
    pub bucket_after: f64,
    pub refused: Option<Refusal>,
    pub fault: Option<Fault>,
    /// The `X-Cafe24-Api-Version` the caller sent.
    pub api_version: Option<String>,
}

/// Running totals over the sandbox's life.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Counters {
    /// Every recorded call.
    pub calls: u64,
    /// Admin API calls answered 2xx.
    pub ok: u64,
    pub not_found: u64,
    pub unauthorized: u64,
    pub refused_bucket: u64,
    pub refused_quota: u64,
    /// Refused by an injected 429 storm.
    pub refused_storm: u64,
    /// Other 4xx from the Admin API.
    pub client_errors: u64,
    /// Injected faults.
    pub server_errors: u64,
    pub timeouts: u64,
    pub dropped_connections: u64,
    /// Successful refreshes and refused ones at the token endpoint.
    pub token_refreshes: u64,
    pub token_refresh_rejections: u64,
    pub webhooks_sent: u64,
    /// Deliveries the target did not answer 2xx (or not at all).
    pub webhooks_failed: u64,
    /// Records dropped from the log to respect its limit.
    pub records_dropped: u64,
}

impl Counters {
    fn count(&mut self, r: &CallRecord) {
        self.calls += 1;
        let token = r.path == TOKEN_PATH;
        match (r.refused, r.fault) {
            (Some(Refusal::Bucket), _) => self.refused_bucket += 1,
            (Some(Refusal::Quota), _) => self.refused_quota += 1,
            (Some(Refusal::Storm), _) => self.refused_storm += 1,
            (None, Some(Fault::ServerError)) => self.server_errors += 1,
            (None, Some(Fault::Timeout(TimeoutMode::Hold(_)))) => self.timeouts += 1,
            (None, Some(Fault::Timeout(TimeoutMode::Drop | TimeoutMode::Close))) => self.dropped_connections += 1,
            (None, None) if token && r.status == 200 => self.token_refreshes += 1,
            (None, None) if token => self.token_refresh_rejections += 1,
            (None, None) => match r.status {
                200..=299 => self.ok += 1,
                401 => self.unauthorized += 1,
                404 => self.not_found += 1,
                _ => self.client_errors += 1,
            },
        }
    }
}

/// The bounded call log and the counters.
#[derive(Debug)]
pub(crate) struct CallLog {
    records: VecDeque<CallRecord>,
    limit: usize,
    next_seq: u64,
    pub(crate) counters: Counters,
}

impl CallLog {
    pub(crate) fn new(limit: usize) -> Self {
        Self { records: VecDeque::new(), limit, next_seq: 1, counters: Counters::default() }
    }

    /// Numbers, counts and keeps a record.
    pub(crate) fn push(&mut self, mut record: CallRecord) {
        record.seq = self.next_seq;
        self.next_seq += 1;
        self.counters.count(&record);
        if self.records.len() == self.limit {
            self.records.pop_front();
            self.counters.records_dropped += 1;
        }
        self.records.push_back(record);
    }

    /// Records with `seq > after`, oldest first.
    pub(crate) fn since(&self, after: u64) -> Vec<CallRecord> {
        self.records.iter().filter(|r| r.seq > after).cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(path: &str, status: u16, refused: Option<Refusal>, fault: Option<Fault>) -> CallRecord {
        CallRecord {
            seq: 0,
            at: Duration::ZERO,
            mall_id: "m".into(),
            method: "GET".into(),
            path: path.into(),
            status,
            bucket_before: 0.0,
            bucket_after: 0.0,
            refused,
            fault,
            api_version: None,
        }
    }

    #[test]
    fn counts_by_outcome_and_keeps_the_newest() {
        let mut log = CallLog::new(3);
        log.push(record("/api/v2/admin/products/1", 200, None, None));
        log.push(record("/api/v2/admin/products/1", 429, Some(Refusal::Bucket), None));
        log.push(record("/api/v2/admin/products/1", 500, None, Some(Fault::ServerError)));
        log.push(record(TOKEN_PATH, 200, None, None));
        log.push(record(TOKEN_PATH, 400, None, None));
        let c = &log.counters;
        assert_eq!((c.calls, c.ok, c.refused_bucket, c.server_errors), (5, 1, 1, 1));
        assert_eq!((c.token_refreshes, c.token_refresh_rejections, c.records_dropped), (1, 1, 2));
        let kept: Vec<u64> = log.since(0).iter().map(|r| r.seq).collect();
        assert_eq!(kept, [3, 4, 5]);
        assert_eq!(log.since(4).len(), 1);
        let json = serde_json::to_value(&log.since(4)[0]).unwrap();
        assert_eq!((json["at_secs"].as_f64(), json["refused"].is_null()), (Some(0.0), true));
    }
}
