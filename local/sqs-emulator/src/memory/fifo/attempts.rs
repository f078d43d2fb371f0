//! Receive attempts in memory: what `lua/receive.lua` does with its `rx`
//! and `rxx` keys (the rules: `crate::receive_attempt`). An attempt that
//! took messages is kept for the deduplication interval; the same attempt
//! again answers them, their visibility reset, while every one is still in
//! flight from it untouched, and is refused once any is not.

use super::{Fifo, Pulled, millis, received};
use crate::error::QueueError;
use crate::receipt::Receipt;
use crate::receive_attempt::ReceiveAttemptId;
use sluice_domain::queue::rules::DEDUP_WINDOW;
use std::collections::{HashMap, VecDeque};
use std::time::Duration;

/// A queue's recent receive attempts.
#[derive(Debug, Default)]
pub(super) struct Attempts {
    by_id: HashMap<ReceiveAttemptId, Attempt>,
    /// Ids by the moment they were recorded to expire, oldest first. An id
    /// recorded again after it expired leaves its older entry behind:
    /// dropped only when its own record is due.
    expiry: VecDeque<(u64, ReceiveAttemptId)>,
}

#[derive(Debug)]
struct Attempt {
    expires: u64,
    taken: Vec<Taken>,
}

/// One message an attempt took, as it left it.
#[derive(Debug, Clone, Copy)]
struct Taken {
    seq: u64,
    receive_count: u32,
    visible_at_ms: u64,
}

impl Attempts {
    fn expire(&mut self, now: u64) {
        while self.expiry.front().is_some_and(|(expires, _)| *expires <= now) {
            let Some((_, id)) = self.expiry.pop_front() else { break };
            if self.by_id.get(&id).is_some_and(|a| a.expires <= now) {
                self.by_id.remove(&id);
            }
        }
    }
}

impl Fifo {
    /// [`Fifo::pull`] as the receive attempt `attempt` (see the module).
    pub(in crate::memory) fn pull_attempt(
        &mut self,
        attempt: Option<&ReceiveAttemptId>,
        max: u8,
        visibility: Duration,
        now: u64,
        dlq: Option<&mut Fifo>,
    ) -> Result<Pulled, QueueError> {
        let Some(id) = attempt else { return Ok(self.pull(max, visibility, now, dlq)) };
        self.attempts.expire(now);
        if let Some(earlier) = self.attempts.by_id.get(id) {
            let taken = earlier.taken.clone();
            return self.replay(id, &taken, visibility, now);
        }
        let pulled = self.pull(max, visibility, now, dlq);
        let until = now + millis(visibility);
        let taken: Vec<Taken> = pulled
            .messages
            .iter()
            .filter_map(|m| Receipt::decode(m.receipt.as_str()))
            .map(|r| Taken { seq: r.seq, receive_count: r.receive_count, visible_at_ms: until })
            .collect();
        if !taken.is_empty() {
            let expires = now + millis(DEDUP_WINDOW);
            self.attempts.by_id.insert(id.clone(), Attempt { expires, taken });
            self.attempts.expiry.push_back((expires, id.clone()));
        }
        Ok(pulled)
    }

    /// The attempt's messages again, their visibility reset; refused when
    /// any is no longer in flight from it untouched.
    fn replay(
        &mut self,
        id: &ReceiveAttemptId,
        taken: &[Taken],
        visibility: Duration,
        now: u64,
    ) -> Result<Pulled, QueueError> {
        let untouched = taken.iter().all(|t| {
            self.messages.get(&t.seq).is_some_and(|m| {
                m.receive_count == t.receive_count && m.visible_at_ms == t.visible_at_ms && m.visible_at_ms > now
            })
        });
        if !untouched {
            return Err(QueueError::AttemptNotRetryable(id.to_string()));
        }
        let until = now + millis(visibility);
        let mut out = Vec::with_capacity(taken.len());
        let mut groups = Vec::new();
        for t in taken {
            let Some(msg) = self.messages.get_mut(&t.seq) else { continue };
            msg.visible_at_ms = until;
            let receipt = Receipt { incarnation: self.info.incarnation, seq: t.seq, receive_count: t.receive_count };
            out.push(received(t.seq, msg, &receipt));
            if !groups.contains(&msg.group) {
                groups.push(msg.group.clone());
            }
        }
        // Every in-flight message of these groups is the attempt's: each
        // group's blocked moment becomes the new one (or it is released,
        // for a zero timeout).
        for group in &groups {
            self.settle(group, now);
        }
        if let Some(attempt) = self.attempts.by_id.get_mut(id) {
            // Its expiry stays: kept from the receive that took, not the
            // latest retry.
            attempt.taken.iter_mut().for_each(|t| t.visible_at_ms = until);
        }
        let next_visible_in = self.blocked.first().map(|(t, _)| Duration::from_millis(t.saturating_sub(now)));
        Ok(Pulled { messages: out, next_visible_in })
    }
}
