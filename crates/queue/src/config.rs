//! What a queue is configured with: its kind (from its name), the SQS
//! attributes the embedded queue implements, and the rules for queue names.

use std::time::Duration;

/// SQS's default visibility timeout.
pub const DEFAULT_VISIBILITY_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest `maxReceiveCount` SQS accepts in a redrive policy.
pub const MAX_RECEIVE_COUNT: u32 = 1000;

/// FIFO or standard. SQS decides it by the name: a FIFO queue's ends in
/// `.fifo`, and a standard queue's cannot (it may hold no '.'), so the kind
/// is never stored and never disagrees with the name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueKind {
    /// Groups served in order, deduplication (the [`WorkQueue`] port).
    ///
    /// [`WorkQueue`]: sluice_domain::WorkQueue
    Fifo,
    /// No order, no deduplication, per-message delays (the [`DelayQueue`]
    /// port).
    ///
    /// [`DelayQueue`]: sluice_domain::DelayQueue
    Standard,
}

impl QueueKind {
    /// The kind of the queue named `name`.
    pub fn of(name: &str) -> Self {
        if name.ends_with(".fifo") { Self::Fifo } else { Self::Standard }
    }

    pub fn is_fifo(self) -> bool {
        self == Self::Fifo
    }
}

/// A queue's settings (the SQS attributes of the same names).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueConfig {
    /// `VisibilityTimeout`: used when a receive names none.
    pub visibility_timeout: Duration,
    /// `ReceiveMessageWaitTimeSeconds`: the long-poll wait used when a
    /// receive through the SQS endpoint names none.
    pub receive_wait: Duration,
    /// `ContentBasedDeduplication`: a send without a deduplication id gets
    /// the SHA-256 of its body as one.
    pub content_based_dedup: bool,
    /// `RedrivePolicy`: where messages go after too many receives.
    pub redrive: Option<RedrivePolicy>,
    /// `DelaySeconds`: how long a message that names no delay of its own
    /// stays invisible after its send (whole seconds, at most 15 minutes).
    /// Standard queues only: the embedded FIFO queue implements no delays.
    pub delay: Duration,
}

impl Default for QueueConfig {
    fn default() -> Self {
        Self {
            visibility_timeout: DEFAULT_VISIBILITY_TIMEOUT,
            receive_wait: Duration::ZERO,
            content_based_dedup: false,
            redrive: None,
            delay: Duration::ZERO,
        }
    }
}

/// A message received `max_receive_count` times is moved, on its next
/// receive, to the queue named `dead_letter_queue` (of the same kind: FIFO
/// for FIFO, at the tail of its group there; standard for standard).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedrivePolicy {
    pub dead_letter_queue: String,
    pub max_receive_count: u32,
}

/// Checks a queue name by SQS's rules: 1 to 80 characters of letters,
/// digits, `-` and `_`, where a FIFO queue's end in `.fifo` (which counts).
pub fn check_queue_name(name: &str) -> Result<(), String> {
    let stem = name.strip_suffix(".fifo").unwrap_or(name);
    let valid = !stem.is_empty()
        && name.len() <= 80
        && stem.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if valid {
        Ok(())
    } else {
        Err(format!(
            "queue name {name:?} is invalid: it must be 1 to 80 characters of letters, digits, '-' and '_', a FIFO \
             queue's ending in .fifo"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_sqs_rules_and_tell_the_kind() {
        assert!(check_queue_name("sluice-events.fifo").is_ok());
        assert!(check_queue_name(&format!("{}.fifo", "a".repeat(75))).is_ok());
        assert!(check_queue_name(&format!("{}.fifo", "a".repeat(76))).is_err());
        assert!(check_queue_name(".fifo").is_err());
        assert!(check_queue_name("a b.fifo").is_err());
        assert!(check_queue_name("sluice-flush").is_ok());
        assert!(check_queue_name(&"a".repeat(80)).is_ok());
        assert!(check_queue_name(&"a".repeat(81)).is_err());
        assert!(check_queue_name("a.b").unwrap_err().contains("letters, digits"));
        assert!(check_queue_name("").is_err());
        assert_eq!((QueueKind::of("q.fifo"), QueueKind::of("q")), (QueueKind::Fifo, QueueKind::Standard));
    }
}
