//! The messages and answers of the work queue port.

use super::rules::{self, RuleViolation};
use crate::{DedupId, GroupKey};
use std::fmt;
use std::time::{Duration, SystemTime};

/// Messages the pipe hands one Step Functions execution at most: the
/// template's `BatchSize`, and `sluice dev`'s pipe.
pub const PIPE_BATCH_SIZE: usize = 10;
/// Step Functions' limit on an execution's input (UTF-8 bytes of JSON).
pub const EXECUTION_INPUT_LIMIT: usize = 262_144;
/// What the pipe wraps around each body in the execution input, at most:
/// the SQS record's message id, receipt handle, attributes (group and
/// deduplication ids of up to 128 characters each), MD5, source ARN.
pub const RECORD_ENVELOPE_BYTES: usize = 2_048;
/// The largest message body, measured escaped as the JSON string it is in
/// the execution input, that keeps a full batch within the input limit.
/// A larger one would fail its whole batch, other groups' messages
/// included, with `States.DataLimitExceeded` on every delivery.
pub const MAX_MESSAGE_BYTES: usize = EXECUTION_INPUT_LIMIT / PIPE_BATCH_SIZE - RECORD_ENVELOPE_BYTES;
const _: () = assert!(PIPE_BATCH_SIZE * (MAX_MESSAGE_BYTES + RECORD_ENVELOPE_BYTES) <= EXECUTION_INPUT_LIMIT);

/// A message to enqueue: its FIFO group, its deduplication id and its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutgoingMessage {
    pub group: GroupKey,
    pub dedup: DedupId,
    pub body: String,
}

impl OutgoingMessage {
    pub fn new(group: GroupKey, dedup: DedupId, body: impl Into<String>) -> Self {
        Self { group, dedup, body: body.into() }
    }

    /// The body's size as the pipe passes it on: a JSON string, escaped.
    pub fn escaped_len(&self) -> usize {
        serde_json::to_string(&self.body).map_or(usize::MAX, |escaped| escaped.len())
    }
}

/// The id the queue gave a message when it accepted it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MessageId(String);

/// The handle of one receipt of a message: deleting the message or changing
/// its visibility takes the handle of its latest receipt.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ReceiptHandle(String);

macro_rules! opaque_string {
    ($ty:ident) => {
        impl $ty {
            pub fn new(s: impl Into<String>) -> Self {
                Self(s.into())
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

opaque_string!(MessageId);
opaque_string!(ReceiptHandle);

/// What became of one entry of a send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendOutcome {
    /// The queue accepted the message (or, within the deduplication window,
    /// a message with the same deduplication id, which it will not deliver
    /// twice).
    Accepted(Accepted),
    /// The message was not enqueued.
    Failed(SendFailure),
}

impl SendOutcome {
    pub fn is_accepted(&self) -> bool {
        matches!(self, Self::Accepted(_))
    }
}

/// An accepted message's id and its FIFO sequence number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    pub message_id: MessageId,
    /// SQS's `SequenceNumber`: increases with every message of a queue.
    pub sequence_number: String,
}

/// Why an entry was not enqueued.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct SendFailure {
    /// SQS's code (e.g. `InvalidParameterValue`), or one of
    /// [`rules::codes`] for failures decided on this side.
    pub code: String,
    pub message: String,
    /// True when sending the same entry again cannot succeed (the entry
    /// itself is wrong); false when a later attempt may succeed.
    pub sender_fault: bool,
}

impl SendFailure {
    pub fn new(code: impl Into<String>, message: impl Into<String>, sender_fault: bool) -> Self {
        Self { code: code.into(), message: message.into(), sender_fault }
    }
}

impl From<RuleViolation> for SendFailure {
    fn from(violation: RuleViolation) -> Self {
        Self::new(violation.code(), violation.to_string(), true)
    }
}

/// A receive: how many messages at most, how long they stay invisible, and
/// how long to wait for the first one (long polling).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReceiveRequest {
    max_messages: u8,
    visibility_timeout: Duration,
    wait: Duration,
}

impl ReceiveRequest {
    /// Checks SQS's limits: 1 to 10 messages; a visibility timeout of 0 s
    /// to 12 h and a wait of 0 to 20 s, both in whole seconds.
    pub fn new(max_messages: u8, visibility_timeout: Duration, wait: Duration) -> Result<Self, RuleViolation> {
        rules::check_receive(max_messages, visibility_timeout, wait)?;
        Ok(Self { max_messages, visibility_timeout, wait })
    }

    pub fn max_messages(&self) -> u8 {
        self.max_messages
    }

    pub fn visibility_timeout(&self) -> Duration {
        self.visibility_timeout
    }

    pub fn wait(&self) -> Duration {
        self.wait
    }
}

/// A received message and what SQS says about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceivedMessage {
    pub message_id: MessageId,
    pub receipt: ReceiptHandle,
    pub body: String,
    pub group: GroupKey,
    pub dedup: DedupId,
    pub sequence_number: String,
    /// `ApproximateReceiveCount`: 1 on the first receipt.
    pub receive_count: u32,
    /// `SentTimestamp`.
    pub sent_at: SystemTime,
    /// `ApproximateFirstReceiveTimestamp`.
    pub first_received_at: SystemTime,
}

/// How full a queue is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueueAttributes {
    /// `ApproximateNumberOfMessages`: messages waiting to be received.
    pub visible: u64,
    /// `ApproximateNumberOfMessagesNotVisible`: received, not yet deleted,
    /// still within their visibility timeout.
    pub in_flight: u64,
    /// `ApproximateNumberOfMessagesDelayed`: sent with a delay (their own,
    /// or their queue's) that is not over yet. Always 0 on a FIFO queue
    /// here: the work queue port sends without delays.
    pub delayed: u64,
    /// How long the oldest undeleted message has been in the queue. SQS
    /// publishes this only as the CloudWatch metric
    /// `ApproximateAgeOfOldestMessage`, not as a queue attribute, so the
    /// SQS adapter reports `None`.
    pub oldest_age: Option<Duration>,
}
