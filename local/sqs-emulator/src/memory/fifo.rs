//! One queue in memory: the same model as the Redis store's scripts
//! (`lua/*.lua`), in Rust data structures. A standard queue is the same
//! model with every message a group of its own (`standard`).
//!
//! - `messages`: every undeleted message by sequence number (arrival order).
//! - `groups`: per group, its messages' sequence numbers in order, and
//!   whether the group is *ready* (in `ready`) or *blocked* (something of
//!   it is in flight) until a moment.
//! - `ready`: the ready groups, kept as the queue's [`GroupScan`] wants.
//!   Round-robin: a ring; a pull takes the group at the front, serves as
//!   much of its head as the batch has room for, and blocks it; a group
//!   that becomes ready again joins the back. So every ready group is
//!   served once per turn of the ring however deep any one group is. SQS
//!   FIFO: an index by head sequence number; a pull takes the ready group
//!   with the oldest head, as long as that head lies within the window
//!   (the first `window` messages), and serves only messages within it.
//! - `blocked`: blocked groups by the moment their last in-flight message
//!   becomes visible again; a pull first returns those whose moment passed.
//!
//! A group's in-flight messages are always at its head (a group is served
//! only when nothing of it is in flight, and always from its head), and at
//! most ten of them, so settling a group looks at ten messages at most.
//! A ready group left empty by a delete stays in the ring until a pull
//! reaches it (the Redis store does the same: removing from the middle of
//! a list costs a scan); the index drops it at once, as it re-files a ready
//! group whose head was deleted or moved.
//!
//! [`GroupScan`]: crate::config::GroupScan

use crate::backend::{Pulled, QueueInfo};
use crate::error::QueueError;
use crate::receipt::{Receipt, sequence_number};
use attempts::Attempts;
use ready::Ready;
use sluice_domain::queue::rules::{DEDUP_WINDOW, MAX_BATCH_ENTRIES};
use sluice_domain::queue::{Accepted, MessageId, OutgoingMessage, QueueAttributes, ReceiptHandle, ReceivedMessage};
use sluice_domain::{DedupId, GroupKey};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

mod attempts;
mod ready;
mod standard;

#[derive(Debug)]
pub(super) struct Fifo {
    pub(super) info: QueueInfo,
    next_seq: u64,
    messages: BTreeMap<u64, Stored>,
    groups: HashMap<GroupKey, Group>,
    ready: Ready,
    blocked: BTreeSet<(u64, GroupKey)>,
    dedup: HashMap<DedupId, Accepted>,
    dedup_expiry: VecDeque<(u64, DedupId)>,
    attempts: Attempts,
}

#[derive(Debug)]
struct Group {
    seqs: VecDeque<u64>,
    /// `None`: ready (in `ready`). `Some(t)`: blocked until `t` ms.
    blocked_until: Option<u64>,
}

#[derive(Debug, Clone)]
struct Stored {
    id: MessageId,
    body: String,
    group: GroupKey,
    dedup: DedupId,
    sent_ms: u64,
    receive_count: u32,
    first_receive_ms: u64,
    visible_at_ms: u64,
    /// The queue that moved this message here as its dead-letter queue.
    source: Option<String>,
}

impl Stored {
    /// A message as sent: never received, moved here by no other queue.
    fn new(id: MessageId, body: String, group: GroupKey, dedup: DedupId, sent_ms: u64, visible_at_ms: u64) -> Self {
        Self { id, body, group, dedup, sent_ms, receive_count: 0, first_receive_ms: 0, visible_at_ms, source: None }
    }
}

impl Fifo {
    pub(super) fn new(info: QueueInfo) -> Self {
        let ready = Ready::new(info.config.group_scan);
        Self {
            info,
            next_seq: 1,
            messages: BTreeMap::new(),
            groups: HashMap::new(),
            ready,
            blocked: BTreeSet::new(),
            dedup: HashMap::new(),
            dedup_expiry: VecDeque::new(),
            attempts: Attempts::default(),
        }
    }

    pub(super) fn send(&mut self, entries: &[&OutgoingMessage], now: u64) -> Vec<Accepted> {
        while self.dedup_expiry.front().is_some_and(|(expires, _)| *expires <= now) {
            if let Some((_, id)) = self.dedup_expiry.pop_front() {
                self.dedup.remove(&id);
            }
        }
        let mut accepted = Vec::with_capacity(entries.len());
        for entry in entries {
            if let Some(first) = self.dedup.get(&entry.dedup) {
                accepted.push(first.clone());
                continue;
            }
            let id = MessageId::new(uuid::Uuid::new_v4().to_string());
            let stored = Stored::new(id.clone(), entry.body.clone(), entry.group.clone(), entry.dedup.clone(), now, 0);
            let answer = Accepted { message_id: id, sequence_number: sequence_number(self.enqueue(stored)) };
            self.dedup.insert(entry.dedup.clone(), answer.clone());
            self.dedup_expiry.push_back((now + millis(DEDUP_WINDOW), entry.dedup.clone()));
            accepted.push(answer);
        }
        accepted
    }

    /// Stores a message at the tail of its group under the next sequence
    /// number, which it returns. A message not visible yet (a delayed one,
    /// alone in its group) starts its group blocked until it is.
    fn enqueue(&mut self, stored: Stored) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        let (group, due) = (stored.group.clone(), stored.visible_at_ms);
        self.messages.insert(seq, stored);
        self.ready.inserted(&self.messages);
        match self.groups.get_mut(&group) {
            Some(g) => g.seqs.push_back(seq),
            None => {
                let blocked_until = (due > 0).then_some(due);
                self.groups.insert(group.clone(), Group { seqs: VecDeque::from([seq]), blocked_until });
                if blocked_until.is_some() {
                    self.blocked.insert((due, group));
                } else {
                    self.ready.join(group, seq);
                }
            }
        }
        seq
    }

    /// Takes message `seq` out of `messages` (not out of its group).
    fn remove_message(&mut self, seq: u64) -> Option<Stored> {
        let removed = self.messages.remove(&seq)?;
        self.ready.removed(seq, &self.messages);
        Some(removed)
    }

    /// Returns blocked groups whose moment has passed to `ready`.
    fn reap(&mut self, now: u64) {
        while self.blocked.first().is_some_and(|(until, _)| *until <= now) {
            let Some((_, name)) = self.blocked.pop_first() else { break };
            self.unblock(name);
        }
    }

    fn unblock(&mut self, name: GroupKey) {
        let Some(group) = self.groups.get_mut(&name) else { return };
        group.blocked_until = None;
        match group.seqs.front() {
            None => {
                self.groups.remove(&name);
            }
            Some(&head) => self.ready.join(name, head),
        }
    }

    /// Takes up to `max` messages; a message received `max_receive_count`
    /// times already goes to `dlq` instead.
    pub(super) fn pull(&mut self, max: u8, visibility: Duration, now: u64, mut dlq: Option<&mut Fifo>) -> Pulled {
        self.reap(now);
        let max = usize::from(max).min(MAX_BATCH_ENTRIES);
        let until = now + millis(visibility);
        let max_receives = self.info.config.redrive.as_ref().map(|p| p.max_receive_count);
        let mut out = Vec::new();
        while out.len() < max {
            let Some(name) = self.ready.take_next() else { break };
            let Some(group) = self.groups.get_mut(&name) else { continue };
            let mut i = 0;
            // SQS FIFO: messages beyond the window are not seen at all.
            while out.len() < max && i < group.seqs.len() && self.ready.sees(group.seqs[i]) {
                let seq = group.seqs[i];
                let Some(msg) = self.messages.get_mut(&seq) else {
                    group.seqs.remove(i);
                    continue;
                };
                let exhausted = max_receives.is_some_and(|limit| msg.receive_count >= limit);
                if let (true, Some(dlq)) = (exhausted, dlq.as_deref_mut()) {
                    group.seqs.remove(i);
                    let removed = self.messages.remove(&seq);
                    self.ready.removed(seq, &self.messages);
                    if let Some(mut moved) = removed {
                        moved.source = Some(self.info.name.clone());
                        moved.visible_at_ms = 0;
                        dlq.enqueue(moved);
                    }
                    continue;
                }
                msg.receive_count += 1;
                if msg.first_receive_ms == 0 {
                    msg.first_receive_ms = now;
                }
                msg.visible_at_ms = until;
                let receipt = Receipt { incarnation: self.info.incarnation, seq, receive_count: msg.receive_count };
                out.push(received(seq, msg, &receipt));
                i += 1;
            }
            if i > 0 {
                group.blocked_until = Some(until);
                self.blocked.insert((until, name));
            } else if let Some(&head) = group.seqs.front() {
                // Nothing served, messages left: under SQS FIFO, its head
                // (its first messages moved to the dead-letter queue) lies
                // beyond the window, so it waits there. A ring always gets
                // a message from a group with some; should it not, keep the
                // group and stop.
                let ring = self.ready.is_ring();
                self.ready.join(name, head);
                if ring {
                    break;
                }
            } else {
                self.groups.remove(&name);
            }
        }
        let next_visible_in = self.blocked.first().map(|(t, _)| Duration::from_millis(t.saturating_sub(now)));
        Pulled { messages: out, next_visible_in }
    }

    /// Finds the message a receipt names, if it is still there under that
    /// receipt. `Err` when the handle is not one of this queue's.
    fn locate(&self, receipt: &ReceiptHandle) -> Result<Option<u64>, QueueError> {
        let invalid = || QueueError::InvalidReceipt(receipt.as_str().to_owned());
        let r = Receipt::decode(receipt.as_str()).ok_or_else(invalid)?;
        if r.incarnation != self.info.incarnation {
            return Err(invalid());
        }
        Ok(self.messages.get(&r.seq).filter(|m| m.receive_count == r.receive_count).map(|_| r.seq))
    }

    pub(super) fn delete(&mut self, receipt: &ReceiptHandle, now: u64) -> Result<(), QueueError> {
        let Some(seq) = self.locate(receipt)? else { return Ok(()) };
        let Some(msg) = self.remove_message(seq) else { return Ok(()) };
        self.unlink(&msg.group, seq);
        self.settle(&msg.group, now);
        Ok(())
    }

    /// Removes `seq` from its group's order, re-filing a ready group whose
    /// head it was (and forgetting it when empty, unless a ring holds it).
    fn unlink(&mut self, group: &GroupKey, seq: u64) {
        let Some(g) = self.groups.get_mut(group) else { return };
        let Some(at) = g.seqs.iter().position(|&s| s == seq) else { return };
        g.seqs.remove(at);
        if at == 0 && g.blocked_until.is_none() {
            let head = g.seqs.front().copied();
            self.ready.head_changed(group, seq, head);
            if head.is_none() && !self.ready.is_ring() {
                self.groups.remove(group);
            }
        }
    }

    pub(super) fn change_visibility(
        &mut self,
        receipt: &ReceiptHandle,
        timeout: Duration,
        now: u64,
    ) -> Result<(), QueueError> {
        let seq = self.locate(receipt)?.ok_or(QueueError::NotInFlight)?;
        let msg = self.messages.get_mut(&seq).ok_or(QueueError::NotInFlight)?;
        if msg.visible_at_ms <= now {
            return Err(QueueError::NotInFlight);
        }
        msg.visible_at_ms = now + millis(timeout);
        let group = msg.group.clone();
        self.settle(&group, now);
        Ok(())
    }

    /// Re-derives a blocked group's moment from its in-flight head, and
    /// unblocks it when nothing of it is in flight any more.
    fn settle(&mut self, name: &GroupKey, now: u64) {
        let Some(group) = self.groups.get_mut(name) else { return };
        let Some(old) = group.blocked_until else { return };
        let latest = group
            .seqs
            .iter()
            .take(MAX_BATCH_ENTRIES)
            .filter_map(|seq| self.messages.get(seq))
            .map(|m| m.visible_at_ms)
            .filter(|&t| t > now)
            .max();
        self.blocked.remove(&(old, name.clone()));
        match latest {
            Some(t) => {
                group.blocked_until = Some(t);
                self.blocked.insert((t, name.clone()));
            }
            None => self.unblock(name.clone()),
        }
    }

    pub(super) fn attributes(&mut self, now: u64) -> QueueAttributes {
        self.reap(now);
        // Invisible messages are the heads of blocked groups: in flight once
        // received, delayed before their first receive (standard queues).
        let (mut in_flight, mut delayed) = (0, 0);
        let invisible = self
            .blocked
            .iter()
            .filter_map(|(_, name)| self.groups.get(name))
            .flat_map(|g| g.seqs.iter().take(MAX_BATCH_ENTRIES))
            .filter_map(|seq| self.messages.get(seq))
            .filter(|m| m.visible_at_ms > now);
        for m in invisible {
            if m.receive_count == 0 { delayed += 1 } else { in_flight += 1 }
        }
        let total = self.messages.len() as u64;
        let oldest_age = self.messages.values().next().map(|m| Duration::from_millis(now.saturating_sub(m.sent_ms)));
        QueueAttributes { visible: total - in_flight - delayed, in_flight, delayed, oldest_age }
    }

    pub(super) fn purge(&mut self) {
        self.messages.clear();
        self.groups.clear();
        self.ready.clear();
        self.blocked.clear();
    }

    /// Moves this queue's movable messages to `to` (see
    /// [`crate::QueueBackend::move_messages`]).
    pub(super) fn move_to(&mut self, to: &mut Fifo, only_from: Option<&str>, now: u64) -> u64 {
        self.reap(now);
        let movable: Vec<u64> = self
            .messages
            .iter()
            .filter(|(_, m)| self.groups.get(&m.group).is_some_and(|g| g.blocked_until.is_none()))
            .filter(|(_, m)| only_from.is_none_or(|q| m.source.as_deref() == Some(q)))
            .map(|(&seq, _)| seq)
            .collect();
        for &seq in &movable {
            let Some(msg) = self.remove_message(seq) else { continue };
            self.unlink(&msg.group, seq);
            to.enqueue(Stored::new(msg.id, msg.body, msg.group, msg.dedup, msg.sent_ms, 0));
        }
        movable.len() as u64
    }
}

fn received(seq: u64, msg: &Stored, receipt: &Receipt) -> ReceivedMessage {
    ReceivedMessage {
        message_id: msg.id.clone(),
        receipt: ReceiptHandle::new(receipt.encode()),
        body: msg.body.clone(),
        group: msg.group.clone(),
        dedup: msg.dedup.clone(),
        sequence_number: sequence_number(seq),
        receive_count: msg.receive_count,
        sent_at: UNIX_EPOCH + Duration::from_millis(msg.sent_ms),
        first_received_at: UNIX_EPOCH + Duration::from_millis(msg.first_receive_ms),
    }
}

pub(super) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

pub(super) fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, millis)
}
