//! Errors of the embedded queue. Each maps to the SQS error an SQS client
//! would see for the same mistake (`sqs_api::error`).

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
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    /// A script answered something it never returns: a bug, not an outage.
    #[error("unexpected reply from {script}: {reply}")]
    UnexpectedReply { script: &'static str, reply: String },
}
