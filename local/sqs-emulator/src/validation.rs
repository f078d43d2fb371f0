//! Checks shared by both stores before they create a queue.

use crate::config::{GroupScan, MAX_RECEIVE_COUNT, QueueConfig, QueueKind, RedrivePolicy, check_queue_name};
use crate::error::QueueError;
use sluice_domain::queue::rules::{self, MAX_WAIT};

/// Checks a new queue's name and settings against SQS's limits and what
/// its kind allows.
pub(crate) fn check_create(name: &str, config: &QueueConfig) -> Result<(), QueueError> {
    check_queue_name(name).map_err(QueueError::InvalidParameter)?;
    let kind = QueueKind::of(name);
    rules::check_visibility_timeout(config.visibility_timeout)?;
    rules::check_delay(config.delay)?;
    if kind.is_fifo() && !config.delay.is_zero() {
        return Err(QueueError::InvalidParameter(format!(
            "DelaySeconds {:?} is not implemented for FIFO queues by sluice's embedded queue: only standard queues \
             delay messages",
            config.delay
        )));
    }
    if !kind.is_fifo() && config.content_based_dedup {
        return Err(QueueError::InvalidParameter(format!(
            "ContentBasedDeduplication applies to FIFO queues only, and {name:?} is a standard queue"
        )));
    }
    if kind.is_fifo() && config.group_scan == (GroupScan::SqsFifo { window: 0 }) {
        return Err(QueueError::InvalidParameter(format!(
            "the SQS FIFO group scan of {name:?} needs a window of at least 1 message (SQS's is 120,000)"
        )));
    }
    if config.receive_wait > MAX_WAIT || config.receive_wait.subsec_nanos() != 0 {
        return Err(QueueError::InvalidParameter(format!(
            "ReceiveMessageWaitTimeSeconds {:?} is invalid: it must be whole seconds between 0 and 20",
            config.receive_wait
        )));
    }
    if let Some(policy) = &config.redrive {
        check_queue_name(&policy.dead_letter_queue)
            .map_err(|e| QueueError::InvalidParameter(format!("RedrivePolicy: {e}")))?;
        if QueueKind::of(&policy.dead_letter_queue) != kind {
            let (kind, other) = if kind.is_fifo() { ("FIFO", "standard") } else { ("standard", "FIFO") };
            return Err(QueueError::InvalidParameter(format!(
                "RedrivePolicy: the dead-letter queue of a {kind} queue must be {kind}, and {:?} is {other}",
                policy.dead_letter_queue
            )));
        }
        if policy.dead_letter_queue == name {
            return Err(QueueError::InvalidParameter(format!(
                "RedrivePolicy: queue {name:?} cannot be its own dead-letter queue"
            )));
        }
        if !(1..=MAX_RECEIVE_COUNT).contains(&policy.max_receive_count) {
            return Err(QueueError::InvalidParameter(format!(
                "RedrivePolicy: maxReceiveCount {} is invalid: it must be between 1 and {MAX_RECEIVE_COUNT}",
                policy.max_receive_count
            )));
        }
    }
    Ok(())
}

/// The settings a queue named `name` is created with: `config`, its group
/// scan the one its kind has ([`GroupScan::for_kind`]), so that a standard
/// queue created from [`QueueConfig::default`] compares equal to itself.
pub(crate) fn normalized(name: &str, config: &QueueConfig) -> QueueConfig {
    QueueConfig { group_scan: config.group_scan.for_kind(QueueKind::of(name)), ..config.clone() }
}

/// `CreateQueue` of an existing name succeeds only with the same settings.
pub(crate) fn check_same(name: &str, existing: &QueueConfig, wanted: &QueueConfig) -> Result<(), QueueError> {
    let differences = [
        (existing.visibility_timeout != wanted.visibility_timeout, "VisibilityTimeout"),
        (existing.receive_wait != wanted.receive_wait, "ReceiveMessageWaitTimeSeconds"),
        (existing.content_based_dedup != wanted.content_based_dedup, "ContentBasedDeduplication"),
        (existing.redrive != wanted.redrive, "RedrivePolicy"),
        (existing.delay != wanted.delay, "DelaySeconds"),
        (existing.group_scan != wanted.group_scan, "group scan (round-robin or SQS FIFO, and its window)"),
    ];
    match differences.into_iter().find(|(differs, _)| *differs) {
        Some((_, attribute)) => Err(QueueError::QueueNameExists { name: name.to_owned(), attribute }),
        None => Ok(()),
    }
}

pub(crate) fn missing_dead_letter_queue(policy: &RedrivePolicy) -> QueueError {
    QueueError::InvalidParameter(format!(
        "RedrivePolicy: the dead-letter queue {:?} does not exist; create it first",
        policy.dead_letter_queue
    ))
}

/// Refuses an operation meant for the other kind of queue (a send with a
/// group to a standard queue, a delayed send to a FIFO queue).
pub(crate) fn check_kind(name: &str, wanted: QueueKind) -> Result<(), QueueError> {
    let kind = QueueKind::of(name);
    if kind == wanted { Ok(()) } else { Err(QueueError::WrongKind { name: name.to_owned(), kind }) }
}

/// A redrive moves messages between queues of one kind only.
pub(crate) fn check_move(from: &str, to: &str) -> Result<(), QueueError> {
    if from == to {
        return Err(QueueError::InvalidParameter(format!("cannot move messages from {from:?} to itself")));
    }
    if QueueKind::of(from) != QueueKind::of(to) {
        return Err(QueueError::InvalidParameter(format!(
            "cannot move messages from {from:?} to {to:?}: one is a FIFO queue and the other a standard queue"
        )));
    }
    Ok(())
}
