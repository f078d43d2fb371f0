//! A standard queue in memory: the FIFO model, with every message a group
//! of its own, named by its message id. Nothing orders a message after
//! another, so any number are in flight at once, and the ring serves them
//! in the order they became visible. A delayed message's group starts
//! blocked until its delay is over, exactly as a group whose message is in
//! flight; the first pull after that moment puts it in the ring. It is
//! told apart from an in-flight message by its receive count, still 0.

use super::{Fifo, Stored, millis};
use sluice_domain::queue::{DelayedMessage, MessageId};
use sluice_domain::{DedupId, GroupKey};

impl Fifo {
    pub(in crate::memory) fn send_delayed(&mut self, entries: &[&DelayedMessage], now: u64) -> Vec<MessageId> {
        entries
            .iter()
            .map(|entry| {
                let id = uuid::Uuid::new_v4().to_string();
                let delay = entry.delay.unwrap_or(self.info.config.delay);
                let visible_at_ms = if delay.is_zero() { 0 } else { now + millis(delay) };
                // A UUID is a valid SQS id (hex digits and '-').
                let group = GroupKey::parse(&id).expect("a UUID is a valid group key");
                let dedup = DedupId::parse(&id).expect("a UUID is a valid deduplication id");
                self.enqueue(Stored::new(MessageId::new(&id), entry.body.clone(), group, dedup, now, visible_at_ms));
                MessageId::new(id)
            })
            .collect()
    }
}
