//! Faults for the Sheets sandbox: queued one-shot faults a test injects
//! for the next calls of an operation, on top of the shared probabilistic
//! plan ([`crate::fault::FaultConfig`]).
//!
//! Both act on calls that got past authentication and the quota check
//! (those count against the quotas whatever the fault does). A queued
//! fault wins over a probabilistic one; the probabilistic plan still draws
//! for every such call, so its sequence does not depend on what was
//! queued. Probabilistic faults never apply anything (the request failed
//! before taking effect) and leave the token endpoint alone; "applied, but
//! the client was not told" is what the queued `ApplyThen…` faults are for,
//! and "not applied yet when the client gave up, applied later" is what
//! `AppliedLate` is for (see `late`).

use crate::sheets::record::SheetsOp;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::time::Duration;

/// A fault for the next matching call(s), consumed in the order injected.
///
/// JSON (the control plane's `POST /sandbox/sheets/faults`), durations in
/// milliseconds:
/// `{"status":{"op":"values_append","status":503,"times":2}}`,
/// `{"apply_then_hold":{"op":"values_append","hold":5000}}`,
/// `{"apply_then_status":{"op":"values_update","status":503}}`,
/// `{"applied_late":{"op":"values_append","hold":30000,"apply_after":2000}}`
/// (`apply_after` left out: applied when released).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SheetsFault {
    /// The next `times` calls of `op` answer `status` with Google's error
    /// JSON (nothing applied). 429 uses the quota body.
    Status {
        op: SheetsOp,
        status: u16,
        #[serde(default = "one")]
        times: u32,
    },
    /// The next call of `op` is applied (rows written) and then its
    /// response is held for `hold` (longer than the client's timeout):
    /// "applied, but the response timed out". Other calls are not held up.
    ApplyThenHold {
        op: SheetsOp,
        #[serde(with = "crate::fault::millis")]
        hold: Duration,
    },
    /// The next call of `op` is applied, then answered `status` (applied
    /// but reported failed).
    ApplyThenStatus { op: SheetsOp, status: u16 },
    /// The next call of `op` (a write) is NOT applied when it arrives: it
    /// is applied `apply_after` later, or when the test releases it
    /// ([`crate::SheetsSandbox::release_late`]; `apply_after: None` waits
    /// for that), whichever comes first. Its answer leaves when `hold` has
    /// passed and it has been applied, carrying what applying it answered,
    /// because Google reports a write only once it is done: with `hold`
    /// past the client's timeout the client gives up while the rows are
    /// not in the sheet, and they appear afterwards. An append lands where
    /// an append lands at the moment it is applied, after any rows added
    /// meanwhile. Other calls are not held up.
    AppliedLate {
        op: SheetsOp,
        #[serde(with = "crate::fault::millis")]
        hold: Duration,
        #[serde(default, with = "millis_opt", skip_serializing_if = "Option::is_none")]
        apply_after: Option<Duration>,
    },
}

fn one() -> u32 {
    1
}

/// An optional duration as whole milliseconds; absent is `None`.
mod millis_opt {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub(super) fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => crate::fault::millis::serialize(d, s),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(d)?.map(Duration::from_millis))
    }
}

impl SheetsFault {
    pub fn op(&self) -> SheetsOp {
        match *self {
            Self::Status { op, .. }
            | Self::ApplyThenHold { op, .. }
            | Self::ApplyThenStatus { op, .. }
            | Self::AppliedLate { op, .. } => op,
        }
    }

    /// Names what is wrong: an injected status must be an error (400–599);
    /// only a write can be applied late (a late read or token would change
    /// nothing a test could see).
    pub fn validate(&self) -> Result<(), String> {
        match *self {
            Self::Status { status, .. } | Self::ApplyThenStatus { status, .. } if !(400..=599).contains(&status) => {
                Err(format!("an injected status must be between 400 and 599, got {status}"))
            }
            Self::AppliedLate { op, .. } if !op.is_write() => {
                Err(format!("applied_late is for writes (values_append, values_update, batch_update), not {op:?}"))
            }
            _ => Ok(()),
        }
    }
}

/// What a queued fault does to the one call that consumes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum QueuedFault {
    Status(u16),
    ApplyThenHold(Duration),
    ApplyThenStatus(u16),
    AppliedLate { hold: Duration, apply_after: Option<Duration> },
}

/// The injected faults not yet consumed.
#[derive(Debug, Default)]
pub(crate) struct FaultQueue {
    pending: VecDeque<SheetsFault>,
}

impl FaultQueue {
    pub(crate) fn push(&mut self, fault: SheetsFault) {
        if !matches!(fault, SheetsFault::Status { times: 0, .. }) {
            self.pending.push_back(fault);
        }
    }

    /// Consumes the first fault queued for `op`, if any.
    pub(crate) fn take(&mut self, op: SheetsOp) -> Option<QueuedFault> {
        let index = self.pending.iter().position(|f| f.op() == op)?;
        let taken = match &mut self.pending[index] {
            SheetsFault::Status { status, times, .. } => {
                *times -= 1;
                let status = *status;
                if *times == 0 {
                    self.pending.remove(index);
                }
                return Some(QueuedFault::Status(status));
            }
            SheetsFault::ApplyThenHold { hold, .. } => QueuedFault::ApplyThenHold(*hold),
            SheetsFault::ApplyThenStatus { status, .. } => QueuedFault::ApplyThenStatus(*status),
            SheetsFault::AppliedLate { hold, apply_after, .. } => {
                QueuedFault::AppliedLate { hold: *hold, apply_after: *apply_after }
            }
        };
        self.pending.remove(index);
        Some(taken)
    }

    pub(crate) fn pending(&self) -> Vec<SheetsFault> {
        self.pending.iter().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_are_consumed_in_order_per_operation() {
        let mut queue = FaultQueue::default();
        queue.push(SheetsFault::Status { op: SheetsOp::ValuesAppend, status: 503, times: 2 });
        queue.push(SheetsFault::Status { op: SheetsOp::ValuesGet, status: 500, times: 0 });
        queue.push(SheetsFault::ApplyThenStatus { op: SheetsOp::ValuesAppend, status: 500 });
        queue.push(SheetsFault::ApplyThenHold { op: SheetsOp::ValuesGet, hold: Duration::from_secs(1) });
        assert_eq!(queue.take(SheetsOp::ValuesGet), Some(QueuedFault::ApplyThenHold(Duration::from_secs(1))));
        assert_eq!(queue.take(SheetsOp::ValuesAppend), Some(QueuedFault::Status(503)));
        assert_eq!(queue.take(SheetsOp::ValuesAppend), Some(QueuedFault::Status(503)));
        assert_eq!(queue.take(SheetsOp::ValuesAppend), Some(QueuedFault::ApplyThenStatus(500)));
        assert_eq!(queue.take(SheetsOp::ValuesAppend), None);
        assert!(queue.pending().is_empty());
    }

    #[test]
    fn reads_and_checks_json() {
        let f: SheetsFault = serde_json::from_str(r#"{"apply_then_hold":{"op":"values_append","hold":1500}}"#).unwrap();
        assert_eq!(f, SheetsFault::ApplyThenHold { op: SheetsOp::ValuesAppend, hold: Duration::from_millis(1500) });
        let f: SheetsFault = serde_json::from_str(r#"{"status":{"op":"token","status":503}}"#).unwrap();
        assert_eq!(f, SheetsFault::Status { op: SheetsOp::Token, status: 503, times: 1 });
        assert!(SheetsFault::ApplyThenStatus { op: SheetsOp::ValuesGet, status: 200 }.validate().is_err());
        let late = r#"{"applied_late":{"op":"values_append","hold":30000,"apply_after":2000}}"#;
        let f: SheetsFault = serde_json::from_str(late).unwrap();
        let (hold, apply_after) = (Duration::from_secs(30), Some(Duration::from_secs(2)));
        assert_eq!(f, SheetsFault::AppliedLate { op: SheetsOp::ValuesAppend, hold, apply_after });
        assert_eq!(serde_json::to_string(&f).unwrap(), late);
        let f: SheetsFault = serde_json::from_str(r#"{"applied_late":{"op":"batch_update","hold":0}}"#).unwrap();
        assert_eq!(f, SheetsFault::AppliedLate { op: SheetsOp::BatchUpdate, hold: Duration::ZERO, apply_after: None });
        let read = SheetsFault::AppliedLate { op: SheetsOp::ValuesGet, hold, apply_after: None };
        assert!(read.validate().unwrap_err().contains("for writes"));
    }
}
