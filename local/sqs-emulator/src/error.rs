//! Errors of the embedded queue. Each maps to the SQS error an SQS client
//! would see for the same mistake (`sqs_api::error`).

use crate::config::QueueKind;
use sluice_domain::queue::SendFailure;
use sluice_domain::queue::rules::RuleViolation;

#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    #[error("queue {0:?} does not exist")]
    QueueDoesNotExist(String),
    /// `CreateQueue` for an existing name with different attributes.
    #[error("queue {name:?} already exists with a different {attribute}")]
    QueueNameExists { name: String, attribute: &'static str },
    /// A name, attribute or parameter that cannot work, named.
    #[error("{0}")]
    InvalidParameter(String),
    /// A send through the port of the other kind: a FIFO send (group,
    /// deduplication id) to a standard queue, or a delayed send to a FIFO
    /// queue. The entries' fault, not the call's: see
    /// [`QueueError::entry_failure`].
    #[error(
        "queue {name:?} is a {} queue: {}",
        if kind.is_fifo() { "FIFO" } else { "standard" },
        if kind.is_fifo() {
            "it takes no per-message DelaySeconds (SQS refuses them on FIFO queues); send to it through the \
             WorkQueue port, with a group and a deduplication id"
        } else {
            "it takes no MessageGroupId or MessageDeduplicationId; send to it through the DelayQueue port"
        }
    )]
    WrongKind { name: String, kind: QueueKind },
    /// A rule of SQS's that a message or request breaks.
    #[error(transparent)]
    Rule(#[from] RuleViolation),
    /// A receipt handle this queue never issued.
    #[error("the receipt handle {0:?} is invalid")]
    InvalidReceipt(String),
    /// `ChangeMessageVisibility` on a message that is not in flight under
    /// this receipt (deleted, visible again, or received again since).
    #[error("message does not exist or is not available for visibility timeout change")]
    NotInFlight,
    /// A receive retried with an attempt id whose messages are no longer
    /// the attempt's (deleted, visibility changed, visible again or
    /// received since): see `receive_attempt`.
    #[error("receive attempt {0:?} can no longer be retried: its messages were deleted or changed since")]
    AttemptNotRetryable(String),
    /// A receive (or a release) by a consumer whose consumer lease is no
    /// longer held: another process may be consuming these queues now.
    #[error("this process no longer holds the consumer lease of the queues; another consumer may have taken over")]
    ConsumerLeaseLost,
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    /// A script answered something it never returns: a bug, not an outage.
    #[error("unexpected reply from {script}: {reply}")]
    UnexpectedReply { script: &'static str, reply: String },
}

impl QueueError {
    /// The failure every entry of a send gets when the error is theirs, not
    /// the call's: a send to a queue of the other kind is refused as SQS
    /// refuses such a batch, entry by entry (`InvalidParameterValue`, the
    /// sender's fault), so a caller does not retry what can never succeed.
    pub fn entry_failure(&self) -> Option<SendFailure> {
        match self {
            Self::WrongKind { .. } => Some(SendFailure::new("InvalidParameterValue", self.to_string(), true)),
            _ => None,
        }
    }
}
