//! Reading the scripts' array replies, field by field, with errors that
//! name the script.

use crate::backend::{Pulled, QueueInfo};
use crate::config::{GroupScan, QueueConfig, RedrivePolicy};
use crate::error::QueueError;
use crate::receipt::{Receipt, sequence_number};
use redis::Value;
use sluice_domain::queue::{MessageId, ReceiptHandle, ReceivedMessage};
use sluice_domain::{DedupId, GroupKey};
use std::time::{Duration, UNIX_EPOCH};

#[derive(Debug)]
pub(super) struct Reply {
    script: &'static str,
    items: std::vec::IntoIter<Value>,
}

impl Reply {
    pub(super) fn new(script: &'static str, value: Value) -> Result<Self, QueueError> {
        match value {
            Value::Array(items) => Ok(Self { script, items: items.into_iter() }),
            other => Err(QueueError::UnexpectedReply { script, reply: format!("{other:?}") }),
        }
    }

    pub(super) fn unexpected(&self, what: impl std::fmt::Display) -> QueueError {
        QueueError::UnexpectedReply { script: self.script, reply: what.to_string() }
    }

    pub(super) fn remaining(&self) -> usize {
        self.items.len()
    }

    pub(super) fn string(&mut self) -> Result<String, QueueError> {
        match self.items.next() {
            Some(Value::BulkString(bytes)) => String::from_utf8(bytes).map_err(|e| self.unexpected(e)),
            Some(Value::SimpleString(s)) => Ok(s),
            Some(Value::Int(n)) => Ok(n.to_string()),
            other => Err(self.unexpected(format!("expected a string, got {other:?}"))),
        }
    }

    /// A string field that may be nil (an unset hash field).
    pub(super) fn optional_string(&mut self) -> Result<Option<String>, QueueError> {
        match self.items.next() {
            Some(Value::Nil) => Ok(None),
            Some(Value::BulkString(bytes)) => String::from_utf8(bytes).map(Some).map_err(|e| self.unexpected(e)),
            other => Err(self.unexpected(format!("expected a string or nil, got {other:?}"))),
        }
    }

    pub(super) fn int(&mut self) -> Result<i64, QueueError> {
        match self.items.next() {
            Some(Value::Int(n)) => Ok(n),
            Some(Value::BulkString(bytes)) => {
                std::str::from_utf8(&bytes).ok().and_then(|s| s.parse().ok()).ok_or_else(|| self.unexpected("number"))
            }
            other => Err(self.unexpected(format!("expected a number, got {other:?}"))),
        }
    }

    pub(super) fn u64(&mut self) -> Result<u64, QueueError> {
        let n = self.int()?;
        u64::try_from(n).map_err(|_| self.unexpected(format!("expected a non-negative number, got {n}")))
    }
}

/// The status string a script answers alone (not in an array).
pub(super) fn status(script: &'static str, value: Value) -> Result<String, QueueError> {
    match value {
        Value::BulkString(bytes) => {
            String::from_utf8(bytes).map_err(|e| QueueError::UnexpectedReply { script, reply: e.to_string() })
        }
        Value::SimpleString(s) => Ok(s),
        Value::Int(n) => Ok(n.to_string()),
        other => Err(QueueError::UnexpectedReply { script, reply: format!("{other:?}") }),
    }
}

/// Reads vis, wait, cbd, dlq, maxrc, created, inc, delay (absent from
/// queues created before delays existed: 0), scan and window (absent from
/// queues created before the choice existed, whose ready groups are a
/// ring: round-robin).
pub(super) fn parse_settings(name: &str, reply: &mut Reply) -> Result<QueueInfo, QueueError> {
    let number = |reply: &mut Reply| -> Result<u64, QueueError> {
        let s = reply.optional_string()?.unwrap_or_default();
        s.parse().map_err(|_| reply.unexpected(format!("setting {s:?} of queue {name:?} is not a number")))
    };
    let visibility_ms = number(reply)?;
    let wait_s = number(reply)?;
    let content_based_dedup = number(reply)? == 1;
    let dlq = reply.optional_string()?.unwrap_or_default();
    let max_receive_count = number(reply)?;
    let created_ms = number(reply)?;
    let inc = reply.optional_string()?.unwrap_or_default();
    let incarnation =
        u64::from_str_radix(&inc, 16).map_err(|_| reply.unexpected(format!("incarnation {inc:?} of {name:?}")))?;
    let delay_ms = match reply.optional_string()? {
        None => 0,
        Some(ms) => ms.parse().map_err(|_| reply.unexpected(format!("delay {ms:?} of {name:?} is not a number")))?,
    };
    let scan = reply.optional_string()?;
    let window = reply.optional_string()?;
    let group_scan = match (scan.as_deref(), window) {
        (None | Some("rr"), _) => GroupScan::RoundRobin,
        (Some("sqs"), Some(w)) => GroupScan::SqsFifo {
            window: w.parse().map_err(|_| reply.unexpected(format!("window {w:?} of {name:?} is not a number")))?,
        },
        (other, _) => return Err(reply.unexpected(format!("group scan {other:?} of {name:?}"))),
    };
    let redrive = (!dlq.is_empty()).then(|| RedrivePolicy {
        dead_letter_queue: dlq,
        max_receive_count: u32::try_from(max_receive_count).unwrap_or(u32::MAX),
    });
    Ok(QueueInfo {
        name: name.to_owned(),
        config: QueueConfig {
            visibility_timeout: Duration::from_millis(visibility_ms),
            receive_wait: Duration::from_secs(wait_s),
            content_based_dedup,
            redrive,
            delay: Duration::from_millis(delay_ms),
            group_scan,
        },
        created_at: UNIX_EPOCH + Duration::from_millis(created_ms),
        incarnation,
    })
}

/// Reads a receive's incarnation, next visibility and messages.
pub(super) fn read_pulled(reply: &mut Reply) -> Result<Pulled, QueueError> {
    let inc = reply.string()?;
    let incarnation = u64::from_str_radix(&inc, 16).map_err(|_| reply.unexpected(format!("incarnation {inc:?}")))?;
    let next = reply.int()?;
    let mut messages = Vec::with_capacity(reply.remaining() / 8);
    while reply.remaining() > 0 {
        let seq = reply.u64()?;
        let message_id = MessageId::new(reply.string()?);
        let body = reply.string()?;
        let group = GroupKey::parse(&reply.string()?).map_err(|e| reply.unexpected(e))?;
        let dedup = DedupId::parse(&reply.string()?).map_err(|e| reply.unexpected(e))?;
        let sent = reply.u64()?;
        let receive_count = u32::try_from(reply.u64()?).map_err(|e| reply.unexpected(e))?;
        let first = reply.u64()?;
        let receipt = Receipt { incarnation, seq, receive_count };
        messages.push(ReceivedMessage {
            message_id,
            receipt: ReceiptHandle::new(receipt.encode()),
            body,
            group,
            dedup,
            sequence_number: sequence_number(seq),
            receive_count,
            sent_at: UNIX_EPOCH + Duration::from_millis(sent),
            first_received_at: UNIX_EPOCH + Duration::from_millis(first),
        });
    }
    Ok(Pulled { messages, next_visible_in: u64::try_from(next).ok().map(Duration::from_millis) })
}
