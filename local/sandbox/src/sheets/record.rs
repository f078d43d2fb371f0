//! What the sandbox remembers about every call it answered: which
//! operation, for whom, what it answered, whether it changed anything and
//! whether it counted against the quotas. Tests read it to check what
//! sluice did, e.g. that no window ever held more accepted writes than the
//! quota allows (`SheetsSandbox::max_accepted_writes_in`).

use crate::fault::TimeoutMode;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::time::Duration;

/// Most records kept; older ones are dropped first.
pub(crate) const RECORD_LIMIT: usize = 1_000_000;

/// A Sheets API operation (or the token endpoint).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SheetsOp {
    /// `GET /v4/spreadsheets/{id}`: a read request.
    SpreadsheetGet,
    /// `GET …/values/{range}`: a read request.
    ValuesGet,
    /// `POST …/values/{range}:append`: a write request.
    ValuesAppend,
    /// `PUT …/values/{range}`: a write request.
    ValuesUpdate,
    /// `POST /v4/spreadsheets/{id}:batchUpdate` (row and column edits, sorts):
    /// a write request.
    BatchUpdate,
    /// `POST /token`: not counted against any quota.
    Token,
}

impl SheetsOp {
    pub fn is_write(self) -> bool {
        matches!(self, Self::ValuesAppend | Self::ValuesUpdate | Self::BatchUpdate)
    }
}

/// A fault that shaped a call's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordedFault {
    /// A queued `SheetsFault::Status`: answered its status, nothing applied.
    Status,
    /// A queued `SheetsFault::ApplyThenHold`: applied, answer held.
    ApplyThenHold,
    /// A queued `SheetsFault::ApplyThenStatus`: applied, answered an error.
    ApplyThenStatus,
    /// A queued `SheetsFault::AppliedLate`: held on arrival, applied later
    /// (the record is amended then).
    AppliedLate,
    /// The configured server error rate: 500, nothing applied.
    ServerError,
    /// The configured timeout rate: held then 504, or the connection
    /// dropped; nothing applied.
    Timeout(TimeoutMode),
}

/// One call to the Sheets API or the token endpoint (the control plane is
/// not recorded).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SheetsCall {
    /// Position in the sandbox's life, from 1.
    pub seq: u64,
    /// When the call was decided, on the sandbox's clock (since start).
    #[serde(rename = "at_secs", serialize_with = "crate::control_plane::secs")]
    pub at: Duration,
    pub op: SheetsOp,
    /// The user the access token (or refresh token) speaks for; `None`
    /// when it was missing or refused.
    pub user: Option<String>,
    pub client_id: Option<String>,
    pub spreadsheet_id: Option<String>,
    /// The range as requested (percent-decoded, without `:append`).
    pub range: Option<String>,
    /// The status answered; for a held answer, the one sent after the hold.
    /// 0 while an `AppliedLate` call waits to be applied.
    pub status: u16,
    /// Rows appended, updated or returned; for a batchUpdate, rows deleted,
    /// inserted or sorted.
    pub rows: usize,
    /// Whether the call took effect (rows written, values read, a token
    /// issued), whatever the client was told. An `AppliedLate` call is
    /// recorded when it arrives (not applied yet) and amended when applied.
    pub applied: bool,
    /// Whether the call was accepted by the quota check and so counts
    /// against the quotas (even if a fault or an error answered it).
    pub counted: bool,
    pub fault: Option<RecordedFault>,
}

impl SheetsCall {
    /// A call of `op` decided at `at`, before anything else about it is known.
    pub(crate) fn new(op: SheetsOp, at: Duration) -> Self {
        Self {
            seq: 0,
            at,
            op,
            user: None,
            client_id: None,
            spreadsheet_id: None,
            range: None,
            status: 0,
            rows: 0,
            applied: false,
            counted: false,
            fault: None,
        }
    }
}

/// The bounded call log.
#[derive(Debug)]
pub(crate) struct CallLog {
    records: VecDeque<SheetsCall>,
    limit: usize,
    next_seq: u64,
}

impl CallLog {
    pub(crate) fn new(limit: usize) -> Self {
        Self { records: VecDeque::new(), limit, next_seq: 1 }
    }

    /// Numbers and keeps a record, dropping the oldest past the limit;
    /// returns its number.
    pub(crate) fn push(&mut self, mut record: SheetsCall) -> u64 {
        let seq = self.next_seq;
        record.seq = seq;
        self.next_seq += 1;
        if self.records.len() == self.limit {
            self.records.pop_front();
        }
        self.records.push_back(record);
        seq
    }

    /// Changes the record numbered `seq`, if still kept. A late call's
    /// record stays where it arrived (its `at`, when it was counted), so
    /// the log stays in time order; only its outcome is filled in.
    pub(crate) fn amend(&mut self, seq: u64, change: impl FnOnce(&mut SheetsCall)) {
        if let Some(record) = self.records.iter_mut().rev().find(|r| r.seq == seq) {
            change(record);
        }
    }

    /// Records with `seq > after`, oldest first.
    pub(crate) fn since(&self, after: u64) -> Vec<SheetsCall> {
        self.records.iter().filter(|r| r.seq > after).cloned().collect()
    }

    /// The most counted writes (of `user`, or of everyone) in any interval
    /// `[t, t + window)`. Records are kept in time order, so two pointers
    /// suffice.
    pub(crate) fn max_accepted_writes_in(&self, window: Duration, user: Option<&str>) -> usize {
        let times: Vec<Duration> = self
            .records
            .iter()
            .filter(|r| r.op.is_write() && r.counted && user.is_none_or(|u| r.user.as_deref() == Some(u)))
            .map(|r| r.at)
            .collect();
        let (mut best, mut start) = (0, 0);
        for end in 0..times.len() {
            while times[end] - times[start] >= window {
                start += 1;
            }
            best = best.max(end - start + 1);
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(at_ms: u64, user: &str, counted: bool) -> SheetsCall {
        SheetsCall {
            seq: 0,
            at: Duration::from_millis(at_ms),
            op: SheetsOp::ValuesAppend,
            user: Some(user.into()),
            client_id: Some("c".into()),
            spreadsheet_id: Some("s".into()),
            range: Some("Sheet1".into()),
            status: 200,
            rows: 1,
            applied: true,
            counted,
            fault: None,
        }
    }

    #[test]
    fn finds_the_busiest_window_and_keeps_the_newest() {
        let mut log = CallLog::new(6);
        for (at, user, counted) in [(0, "a", true), (500, "b", true), (900, "a", true), (950, "a", false)] {
            log.push(write(at, user, counted));
        }
        log.push(write(1000, "a", true));
        log.push(write(1400, "a", true));
        let second = Duration::from_secs(1);
        // [500, 1500) holds 500, 900, 1000, 1400; 0 and 1000 are a full window apart.
        assert_eq!(log.max_accepted_writes_in(second, None), 4);
        assert_eq!(log.max_accepted_writes_in(second, Some("a")), 3);
        log.push(write(3000, "b", true));
        assert_eq!(log.since(0).first().map(|r| r.seq), Some(2));
        let json = serde_json::to_value(&log.since(6)[0]).unwrap();
        assert_eq!((json["at_secs"].as_f64(), json["op"].as_str()), (Some(3.0), Some("values_append")));
    }
}
