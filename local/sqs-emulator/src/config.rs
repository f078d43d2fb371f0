//! What a queue is configured with: its kind (from its name), the SQS
//! attributes the embedded queue implements, and the rules for queue names.

use std::time::Duration;

/// SQS's default visibility timeout.
pub const DEFAULT_VISIBILITY_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest `maxReceiveCount` SQS accepts in a redrive policy.
pub const MAX_RECEIVE_COUNT: u32 = 1000;
/// How many messages an SQS FIFO queue looks through to find available
/// message groups ("FIFO queues scan the first 120,000 messages to
/// determine available message groups", SQS Developer Guide, *Avoid large
/// message backlogs with the same message group ID*).
pub const SQS_FIFO_SCAN_WINDOW: u32 = 120_000;

/// How a FIFO queue chooses which ready groups a receive serves. Either way
/// a receive takes up to ten messages, as many of one group as it can (in
/// the group's order) before the next group's, and a group with a message
/// in flight is not served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupScan {
    /// Ready groups form a ring: a served group rejoins the back when it
    /// is ready again, so every group is served once per turn however deep
    /// another is. Fairer than SQS; code relying on it is not fair in AWS.
    RoundRobin,
    /// As SQS FIFO does: groups are served in the order of their oldest
    /// message, and only groups with a message among the first `window`
    /// messages of the queue (arrival order, in-flight ones included) are
    /// seen at all, so a deep group sent first delays every group behind
    /// it. `window` is [`SQS_FIFO_SCAN_WINDOW`] in AWS; tests scale it down.
    SqsFifo { window: u32 },
}

impl Default for GroupScan {
    /// The faithful mode, AWS's window: what runs locally sees what AWS does.
    fn default() -> Self {
        Self::SqsFifo { window: SQS_FIFO_SCAN_WINDOW }
    }
}

impl GroupScan {
    /// The mode a queue of `kind` actually has: a standard queue's messages
    /// are each a group of their own, served in the order they become
    /// visible (its ring), whatever the configuration says.
    pub fn for_kind(self, kind: QueueKind) -> Self {
        if kind.is_fifo() { self } else { Self::RoundRobin }
    }
}

impl std::fmt::Display for GroupScan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::RoundRobin => f.write_str("round-robin"),
            Self::SqsFifo { window } => write!(f, "sqs-fifo (window {window})"),
        }
    }
}

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
    /// How receives choose among ready groups (FIFO queues; a standard
    /// queue is always [`GroupScan::RoundRobin`], see
    /// [`GroupScan::for_kind`]). Fixed at creation.
    pub group_scan: GroupScan,
}

impl Default for QueueConfig {
    fn default() -> Self {
        Self {
            visibility_timeout: DEFAULT_VISIBILITY_TIMEOUT,
            receive_wait: Duration::ZERO,
            content_based_dedup: false,
            redrive: None,
            delay: Duration::ZERO,
            group_scan: GroupScan::default(),
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
