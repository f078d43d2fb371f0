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
//! the client was not told" is what the queued `ApplyThen…` faults are for.

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
/// `{"apply_then_status":{"op":"values_update","status":503}}`.
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
}

fn one() -> u32 {
    1
}

impl SheetsFault {
    pub fn op(&self) -> SheetsOp {
        match *self {
            Self::Status { op, .. } | Self::ApplyThenHold { op, .. } | Self::ApplyThenStatus { op, .. } => op,
        }
    }

    /// Names what is wrong: an injected status must be an error (400–599).
    pub fn validate(&self) -> Result<(), String> {
        match *self {
            Self::Status { status, .. } | Self::ApplyThenStatus { status, .. } if !(400..=599).contains(&status) => {
                Err(format!("an injected status must be between 400 and 599, got {status}"))
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
    }
}
