//! What a queue is configured with: the SQS attributes the embedded queue
//! implements, and the rules for queue names.

use std::time::Duration;

/// SQS's default visibility timeout.
pub const DEFAULT_VISIBILITY_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest `maxReceiveCount` SQS accepts in a redrive policy.
pub const MAX_RECEIVE_COUNT: u32 = 1000;

/// A FIFO queue's settings (the SQS attributes of the same names).
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
}

impl Default for QueueConfig {
    fn default() -> Self {
        Self {
            visibility_timeout: DEFAULT_VISIBILITY_TIMEOUT,
            receive_wait: Duration::ZERO,
            content_based_dedup: false,
            redrive: None,
        }
    }
}

/// A message received `max_receive_count` times is moved, on its next
/// receive, to the FIFO queue named `dead_letter_queue`, at the tail of its
/// group there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedrivePolicy {
    pub dead_letter_queue: String,
    pub max_receive_count: u32,
}

/// Checks a FIFO queue name: 1 to 80 characters of letters, digits, `-`
/// and `_`, ending in `.fifo` (SQS's rule; the embedded queue is FIFO only).
pub fn check_queue_name(name: &str) -> Result<(), String> {
    let Some(stem) = name.strip_suffix(".fifo") else {
        return Err(format!("queue name {name:?} does not end in .fifo: the embedded queue serves FIFO queues only"));
    };
    let valid = !stem.is_empty()
        && name.len() <= 80
        && stem.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if valid {
        Ok(())
    } else {
        Err(format!(
            "queue name {name:?} is invalid: it must be 1 to 80 characters of letters, digits, '-' and '_', ending \
             in .fifo"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_sqs_fifo_rules() {
        assert!(check_queue_name("sluice-events.fifo").is_ok());
        assert!(check_queue_name(&format!("{}.fifo", "a".repeat(75))).is_ok());
        assert!(check_queue_name(&format!("{}.fifo", "a".repeat(76))).is_err());
        assert!(check_queue_name("plain").unwrap_err().contains("FIFO queues only"));
        assert!(check_queue_name(".fifo").is_err());
        assert!(check_queue_name("a b.fifo").is_err());
    }
}
