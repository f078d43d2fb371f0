//! A standard queue in memory: the FIFO model, with every message a group
//! of its own, named by its message id. Nothing orders a message after
//! another, so any number are in flight at once, and the ring serves them
//! in the order they became visible. A delayed message's group starts
//! blocked until its delay is over, exactly as a group whose message is in
//! flight; the first pull after that moment puts it in the ring. It is
//! told apart from an in-flight message by its receive count, still 0.

use super::{Fifo, Group, Stored, millis};
use sluice_domain::queue::{DelayedMessage, MessageId};
use sluice_domain::{DedupId, GroupKey};
use std::collections::VecDeque;

impl Fifo {
    pub(in crate::memory) fn send_delayed(&mut self, entries: &[&DelayedMessage], now: u64) -> Vec<MessageId> {
        entries
            .iter()
            .map(|entry| {
                let id = uuid::Uuid::new_v4().to_string();
                let delay = entry.delay.unwrap_or(self.info.config.delay);
                let visible_at_ms = if delay.is_zero() { 0 } else { now + millis(delay) };
                let stored = Stored {
                    id: MessageId::new(&id),
                    body: entry.body.clone(),
                    // A UUID is a valid SQS id (hex digits and '-').
                    group: GroupKey::parse(&id).expect("a UUID is a valid group key"),
                    dedup: DedupId::parse(&id).expect("a UUID is a valid deduplication id"),
                    sent_ms: now,
                    receive_count: 0,
                    first_receive_ms: 0,
                    visible_at_ms,
                    source: None,
                };
                let seq = self.next_seq;
                self.next_seq += 1;
                if visible_at_ms == 0 {
                    self.enqueue(seq, stored);
                } else {
                    self.enqueue_delayed(seq, stored, visible_at_ms);
                }
                MessageId::new(id)
            })
            .collect()
    }

    /// Stores a message whose group (its own) is blocked until `due`.
    fn enqueue_delayed(&mut self, seq: u64, stored: Stored, due: u64) {
        let group = stored.group.clone();
        self.messages.insert(seq, stored);
        self.ready.inserted(&self.messages);
        self.groups.insert(group.clone(), Group { seqs: VecDeque::from([seq]), blocked_until: Some(due) });
        self.blocked.insert((due, group));
    }
}
