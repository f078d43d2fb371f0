//! SQS's limits and validity rules, defined once. The SQS adapter checks
//! them before it sends (so a bad message fails with a clear error instead
//! of a round trip), the embedded queue and its SQS endpoint enforce them
//! the way SQS does, and [`super::batching`] splits sends by them.

use super::delay::DelayedMessage;
use super::message::OutgoingMessage;
use crate::sqs_token::{self, InvalidToken};
use std::collections::HashSet;
use std::time::Duration;

/// Entries in one `SendMessageBatch` / `DeleteMessageBatch` /
/// `ChangeMessageVisibilityBatch`, and messages in one `ReceiveMessage`.
pub const MAX_BATCH_ENTRIES: usize = 10;
/// Largest message body, and largest sum of bodies in one batch: 1 MiB.
pub const MAX_PAYLOAD_BYTES: usize = 1_048_576;
/// Longest long-poll wait of one `ReceiveMessage`.
pub const MAX_WAIT: Duration = Duration::from_secs(20);
/// Longest visibility timeout: 12 hours.
pub const MAX_VISIBILITY_TIMEOUT: Duration = Duration::from_secs(12 * 60 * 60);
/// Longest delivery delay, per message (`DelaySeconds`) or per queue (the
/// queue attribute of the same name): 15 minutes.
pub const MAX_DELAY: Duration = Duration::from_secs(15 * 60);
/// How long a FIFO queue remembers a deduplication id after its send.
pub const DEDUP_WINDOW: Duration = Duration::from_secs(5 * 60);
/// Longest batch entry id.
pub const MAX_ENTRY_ID_LEN: usize = 80;

/// The codes of failures decided on this side of the queue, next to SQS's
/// own (`InvalidParameterValue`, `InvalidMessageContents`, …).
pub mod codes {
    /// Not sent: an earlier message of the same group failed in this send,
    /// and sending this one would put it ahead of that one.
    pub const GROUP_HALTED: &str = "Sluice.GroupHalted";
    /// The call carrying the entry failed as a whole (queue unreachable, or
    /// the request refused); whether to try again is the caller's choice.
    pub const CALL_FAILED: &str = "Sluice.CallFailed";
}

/// A rule a message, batch or receive breaks, named.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleViolation {
    #[error("the message body is empty; SQS requires at least one character")]
    EmptyBody,
    #[error("the message body is {len} bytes; SQS accepts at most {MAX_PAYLOAD_BYTES} (1 MiB)")]
    BodyTooLong { len: usize },
    #[error(
        "the message body contains the character U+{code:04X} at byte {at}; SQS accepts only #x9, #xA, #xD, \
         #x20 to #xD7FF, #xE000 to #xFFFD and #x10000 to #x10FFFF"
    )]
    InvalidCharacter { code: u32, at: usize },
    #[error(transparent)]
    InvalidId(#[from] InvalidToken),
    #[error("the batch has no entries")]
    EmptyBatch,
    #[error("the batch has {count} entries; SQS accepts at most {MAX_BATCH_ENTRIES}")]
    TooManyEntries { count: usize },
    #[error("the batch entry id {id:?} is used twice; ids must be distinct within a batch")]
    EntryIdsNotDistinct { id: String },
    #[error(
        "the batch entry id {id:?} is invalid: it must be 1 to {MAX_ENTRY_ID_LEN} characters of letters, digits, \
         '-' and '_'"
    )]
    InvalidEntryId { id: String },
    #[error("the batch's bodies add up to {len} bytes; SQS accepts at most {MAX_PAYLOAD_BYTES} (1 MiB) per batch")]
    BatchTooLong { len: usize },
    #[error("MaxNumberOfMessages {0} is invalid: it must be between 1 and {MAX_BATCH_ENTRIES}")]
    MaxMessages(u8),
    #[error("{what} {value:?} is invalid: it must be whole seconds between 0 and {max} s")]
    Seconds { what: &'static str, value: Duration, max: u64 },
}

impl RuleViolation {
    /// The code SQS answers this violation with.
    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidCharacter { .. } => "InvalidMessageContents",
            Self::EmptyBatch => "EmptyBatchRequest",
            Self::TooManyEntries { .. } => "TooManyEntriesInBatchRequest",
            Self::EntryIdsNotDistinct { .. } => "BatchEntryIdsNotDistinct",
            Self::InvalidEntryId { .. } => "InvalidBatchEntryId",
            Self::BatchTooLong { .. } => "BatchRequestTooLong",
            Self::EmptyBody
            | Self::BodyTooLong { .. }
            | Self::InvalidId(_)
            | Self::MaxMessages(_)
            | Self::Seconds { .. } => "InvalidParameterValue",
        }
    }
}

/// Checks a body against SQS's size and character rules.
pub fn check_body(body: &str) -> Result<(), RuleViolation> {
    if body.is_empty() {
        return Err(RuleViolation::EmptyBody);
    }
    if body.len() > MAX_PAYLOAD_BYTES {
        return Err(RuleViolation::BodyTooLong { len: body.len() });
    }
    // A Rust string holds no surrogates, so only controls and the two
    // non-characters at the end of the BMP remain to refuse.
    match body.char_indices().find(|&(_, c)| !is_allowed_char(c)) {
        Some((at, c)) => Err(RuleViolation::InvalidCharacter { code: u32::from(c), at }),
        None => Ok(()),
    }
}

fn is_allowed_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..='\u{10FFFF}')
}

/// Checks one outgoing message: its body, and its ids again (a
/// [`crate::GroupKey`] or [`crate::DedupId`] is valid by construction, so
/// this is cheap insurance at the boundary).
pub fn check_message(message: &OutgoingMessage) -> Result<(), RuleViolation> {
    sqs_token::check("MessageGroupId", message.group.as_str())?;
    sqs_token::check("MessageDeduplicationId", message.dedup.as_str())?;
    check_body(&message.body)
}

/// Checks one message for a delay queue: its body, and its delay (if it
/// names one) against [`check_delay`].
pub fn check_delayed(message: &DelayedMessage) -> Result<(), RuleViolation> {
    if let Some(delay) = message.delay {
        check_delay(delay)?;
    }
    check_body(&message.body)
}

/// Checks a delivery delay (whole seconds, at most 15 minutes).
pub fn check_delay(delay: Duration) -> Result<(), RuleViolation> {
    check_seconds("DelaySeconds", delay, MAX_DELAY)
}

/// Whether `id` is a valid batch entry id.
pub fn is_valid_entry_id(id: &str) -> bool {
    (1..=MAX_ENTRY_ID_LEN).contains(&id.len())
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Checks a batch request's entry ids, in the order SQS does: not empty, at
/// most ten, each valid, all distinct.
pub fn check_entry_ids<'a>(ids: impl ExactSizeIterator<Item = &'a str>) -> Result<(), RuleViolation> {
    match ids.len() {
        0 => return Err(RuleViolation::EmptyBatch),
        count if count > MAX_BATCH_ENTRIES => return Err(RuleViolation::TooManyEntries { count }),
        _ => {}
    }
    let mut seen = HashSet::new();
    for id in ids {
        if !is_valid_entry_id(id) {
            return Err(RuleViolation::InvalidEntryId { id: id.to_owned() });
        }
        if !seen.insert(id) {
            return Err(RuleViolation::EntryIdsNotDistinct { id: id.to_owned() });
        }
    }
    Ok(())
}

/// Checks that a batch's bodies fit one call.
pub fn check_batch_payload<'a>(bodies: impl Iterator<Item = &'a str>) -> Result<(), RuleViolation> {
    let len: usize = bodies.map(str::len).sum();
    if len > MAX_PAYLOAD_BYTES {
        return Err(RuleViolation::BatchTooLong { len });
    }
    Ok(())
}

/// Checks a visibility timeout (whole seconds, at most 12 h).
pub fn check_visibility_timeout(timeout: Duration) -> Result<(), RuleViolation> {
    check_seconds("VisibilityTimeout", timeout, MAX_VISIBILITY_TIMEOUT)
}

/// Checks a receive's size, visibility timeout and wait.
pub fn check_receive(max_messages: u8, visibility_timeout: Duration, wait: Duration) -> Result<(), RuleViolation> {
    if max_messages == 0 || usize::from(max_messages) > MAX_BATCH_ENTRIES {
        return Err(RuleViolation::MaxMessages(max_messages));
    }
    check_visibility_timeout(visibility_timeout)?;
    check_seconds("WaitTimeSeconds", wait, MAX_WAIT)
}

fn check_seconds(what: &'static str, value: Duration, max: Duration) -> Result<(), RuleViolation> {
    if value.subsec_nanos() != 0 || value > max {
        return Err(RuleViolation::Seconds { what, value, max: max.as_secs() });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_follow_sqs_size_and_character_rules() {
        assert_eq!(check_body(""), Err(RuleViolation::EmptyBody));
        assert!(check_body(&"x".repeat(MAX_PAYLOAD_BYTES)).is_ok());
        assert_eq!(
            check_body(&"x".repeat(MAX_PAYLOAD_BYTES + 1)),
            Err(RuleViolation::BodyTooLong { len: MAX_PAYLOAD_BYTES + 1 })
        );
        assert!(check_body("tab\tnewline\ncr\r 한글 🦀").is_ok());
        assert_eq!(check_body("ab\u{0}"), Err(RuleViolation::InvalidCharacter { code: 0, at: 2 }));
        assert_eq!(check_body("\u{FFFF}"), Err(RuleViolation::InvalidCharacter { code: 0xFFFF, at: 0 }));
        assert_eq!(check_body("\u{1b}").unwrap_err().code(), "InvalidMessageContents");
    }

    #[test]
    fn entry_ids_are_checked_in_sqs_order() {
        assert_eq!(check_entry_ids(std::iter::empty()), Err(RuleViolation::EmptyBatch));
        let eleven: Vec<String> = (0..11).map(|i| i.to_string()).collect();
        assert_eq!(
            check_entry_ids(eleven.iter().map(String::as_str)),
            Err(RuleViolation::TooManyEntries { count: 11 })
        );
        assert_eq!(check_entry_ids(["a", "a"].into_iter()).unwrap_err().code(), "BatchEntryIdsNotDistinct");
        assert_eq!(check_entry_ids(["a b"].into_iter()).unwrap_err().code(), "InvalidBatchEntryId");
        assert!(check_entry_ids(["a-1", "B_2", &"z".repeat(80)].into_iter()).is_ok());
        assert!(!is_valid_entry_id(&"z".repeat(81)));
    }

    #[test]
    fn receive_limits_match_sqs() {
        let s = Duration::from_secs;
        assert!(check_receive(10, s(0), s(20)).is_ok());
        assert_eq!(check_receive(0, s(0), s(0)), Err(RuleViolation::MaxMessages(0)));
        assert_eq!(check_receive(11, s(0), s(0)), Err(RuleViolation::MaxMessages(11)));
        assert!(check_receive(1, s(43_200), s(0)).is_ok());
        assert!(check_receive(1, s(43_201), s(0)).is_err());
        assert!(check_receive(1, Duration::from_millis(1500), s(0)).is_err());
        assert!(check_receive(1, s(1), s(21)).unwrap_err().to_string().contains("WaitTimeSeconds"));
    }

    #[test]
    fn delays_are_whole_seconds_up_to_fifteen_minutes() {
        let s = Duration::from_secs;
        assert!(check_delay(s(0)).is_ok());
        assert!(check_delay(s(900)).is_ok());
        let err = check_delay(s(901)).unwrap_err();
        assert_eq!(err.code(), "InvalidParameterValue");
        assert!(err.to_string().contains("DelaySeconds") && err.to_string().contains("900"), "{err}");
        assert!(check_delay(Duration::from_millis(1500)).is_err());
        assert!(check_delayed(&DelayedMessage::new("b", s(901))).is_err());
        assert!(check_delayed(&DelayedMessage::queue_default("")).is_err());
        assert!(check_delayed(&DelayedMessage::queue_default("b")).is_ok());
    }

    #[test]
    fn ids_from_outside_are_checked_and_named() {
        let err = crate::GroupKey::parse("has space").unwrap_err();
        assert!(err.to_string().starts_with("MessageGroupId \"has space\" is not a valid SQS id"), "{err}");
        let long = "d".repeat(129);
        let err = crate::DedupId::parse(&long).unwrap_err();
        assert_eq!((err.what, err.shown.len()), ("MessageDeduplicationId", 129));
        assert_eq!(RuleViolation::from(err).code(), "InvalidParameterValue");
        assert!(crate::DedupId::parse(&"d".repeat(128)).is_ok());
    }

    #[test]
    fn a_batch_payload_over_one_mib_is_refused() {
        let half = "x".repeat(MAX_PAYLOAD_BYTES / 2);
        assert!(check_batch_payload([half.as_str(), half.as_str()].into_iter()).is_ok());
        assert_eq!(
            check_batch_payload([half.as_str(), half.as_str(), "x"].into_iter()).unwrap_err().code(),
            "BatchRequestTooLong"
        );
    }
}
