//! A receive's attempt id: SQS FIFO's `ReceiveRequestAttemptId`, which
//! makes a retried `ReceiveMessage` answer what the lost one took.
//!
//! AWS's ReceiveMessage API reference, the rules implemented here:
//!
//! > The token used for deduplication of ReceiveMessage calls. If a
//! > networking issue occurs after a ReceiveMessage action, and instead of
//! > a response you receive a generic error, it is possible to retry the
//! > same action with an identical ReceiveRequestAttemptId to retrieve the
//! > same set of messages, even if their visibility timeout has not yet
//! > expired.
//! > - You can use ReceiveRequestAttemptId only for 5 minutes after a
//! >   ReceiveMessage action.
//! > - If a caller of the ReceiveMessage action doesn't provide a
//! >   ReceiveRequestAttemptId, Amazon SQS generates a
//! >   ReceiveRequestAttemptId.
//! > - It is possible to retry the ReceiveMessage action with the same
//! >   ReceiveRequestAttemptId if none of the messages have been modified
//! >   (deleted or had their visibility changes).
//! > - During a visibility timeout, subsequent calls with the same
//! >   ReceiveRequestAttemptId return the same messages and receipt
//! >   handles. If a retry occurs within the deduplication interval, it
//! >   resets the visibility timeout.
//! > - The maximum length of ReceiveRequestAttemptId is 128 characters.
//! >   ReceiveRequestAttemptId can contain alphanumeric characters (a-z,
//! >   A-Z, 0-9) and punctuation (!"#$%&'()*+,-./:;<=>?@[\]^_`{|}~).
//!
//! What the reference leaves open, decided here (both stores alike):
//! - An attempt is remembered for five minutes from the receive that took
//!   its messages (a retry does not extend that), per queue, and only
//!   when it took any: an attempt that found nothing leaves nothing to
//!   repeat, so the same id again receives afresh.
//! - A retry answers the attempt's messages whatever its own
//!   `MaxNumberOfMessages` and `WaitTimeSeconds` (the id names the
//!   attempt, as a deduplication id names a send whatever its body); its
//!   `VisibilityTimeout` (or the queue's) is the one the reset applies.
//! - A retry after any of the attempt's messages was deleted, had its
//!   visibility changed, became visible again when its timeout ran out, or
//!   was received by another attempt, is refused: the messages are no
//!   longer the attempt's to hand out. SQS answers that case with
//!   `InvalidParameterValue`, "The receiveRequestAttemptId is not valid
//!   anymore since the receive call is not retryable." (quoted in
//!   aws/aws-sdk-java#2613); so does the endpoint, for as long as the
//!   attempt is remembered.
//! - On a standard queue the id is ignored, not validated: the reference
//!   says it "applies only to FIFO queues" and names no error for it.

use sluice_domain::sqs_token;
use std::fmt;

/// A valid `ReceiveRequestAttemptId`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ReceiveAttemptId(String);

impl ReceiveAttemptId {
    /// The id, or why SQS would refuse it. The rule is the one SQS applies
    /// to group and deduplication ids too (`sqs_token`): the ASCII graphic
    /// characters are exactly the alphanumerics and punctuation above.
    pub fn parse(id: &str) -> Result<Self, &'static str> {
        if !sqs_token::is_valid(id) {
            return Err("Must be 1 to 128 characters, each alphanumeric or punctuation \
                        (!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~).");
        }
        Ok(Self(id.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ReceiveAttemptId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_what_sqs_takes_and_refuses_the_rest() {
        let every_allowed: String = (b'!'..=b'~').map(char::from).collect();
        assert!(ReceiveAttemptId::parse(&every_allowed).is_ok());
        assert!(ReceiveAttemptId::parse(&"a".repeat(128)).is_ok());
        for bad in ["", " ", "a b", "tab\t", "é", &"a".repeat(129)] {
            assert!(ReceiveAttemptId::parse(bad).is_err(), "{bad:?}");
        }
    }
}
