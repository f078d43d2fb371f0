//! The ready groups of one queue in memory, by its [`GroupScan`]: a ring
//! (round-robin), or an index by head sequence number with the scan
//! window (SQS FIFO), the same two shapes the Redis store keeps in its
//! `ready` key.

use crate::config::GroupScan;
use sluice_domain::GroupKey;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ops::Bound;

#[derive(Debug)]
pub(super) enum Ready {
    /// The ring: served from the front, joined at the back.
    Ring(VecDeque<GroupKey>),
    /// Ready groups by the sequence number of their head (oldest) message,
    /// so the oldest available groups are the first entries; and the
    /// window of messages a receive sees.
    ByHead { groups: BTreeSet<(u64, GroupKey)>, window: Window },
}

/// The first `size` messages in arrival order, kept as `edge`, the
/// sequence number of the last of them (`None` while the queue holds no
/// more than `size`). Kept up to date on every insert and removal so a
/// receive never counts through the backlog: sequence numbers only grow,
/// so an insert never moves the edge once set, and a removal at or before
/// it moves it to the next message.
#[derive(Debug)]
pub(super) struct Window {
    size: usize,
    edge: Option<u64>,
}

impl Ready {
    pub(super) fn new(scan: GroupScan) -> Self {
        match scan {
            GroupScan::RoundRobin => Self::Ring(VecDeque::new()),
            GroupScan::SqsFifo { window } => Self::ByHead {
                groups: BTreeSet::new(),
                window: Window { size: usize::try_from(window).unwrap_or(usize::MAX).max(1), edge: None },
            },
        }
    }

    pub(super) fn is_ring(&self) -> bool {
        matches!(self, Self::Ring(_))
    }

    /// `name`, whose head is message `head`, becomes ready.
    pub(super) fn join(&mut self, name: GroupKey, head: u64) {
        match self {
            Self::Ring(ring) => ring.push_back(name),
            Self::ByHead { groups, .. } => {
                groups.insert((head, name));
            }
        }
    }

    /// The next group to serve, taken out: the ring's front, or the ready
    /// group with the oldest head within the window.
    pub(super) fn take_next(&mut self) -> Option<GroupKey> {
        match self {
            Self::Ring(ring) => ring.pop_front(),
            Self::ByHead { groups, window } => {
                let (head, _) = groups.first()?;
                if window.edge.is_some_and(|edge| *head > edge) {
                    return None;
                }
                groups.pop_first().map(|(_, name)| name)
            }
        }
    }

    /// Whether message `seq` lies within the window (always, for a ring).
    pub(super) fn sees(&self, seq: u64) -> bool {
        match self {
            Self::Ring(_) => true,
            Self::ByHead { window, .. } => window.edge.is_none_or(|edge| seq <= edge),
        }
    }

    /// A ready group's head changed from `old` to `new` (`None`: it is
    /// empty now). A ring does not care: it serves whatever head it finds.
    pub(super) fn head_changed(&mut self, name: &GroupKey, old: u64, new: Option<u64>) {
        if let Self::ByHead { groups, .. } = self
            && groups.remove(&(old, name.clone()))
            && let Some(new) = new
        {
            groups.insert((new, name.clone()));
        }
    }

    /// Message `seq` was added to `messages` (it holds it already).
    pub(super) fn inserted<V>(&mut self, messages: &BTreeMap<u64, V>) {
        if let Self::ByHead { window, .. } = self
            && window.edge.is_none()
            && messages.len() > window.size
        {
            window.edge = messages.keys().nth(window.size - 1).copied();
        }
    }

    /// Message `seq` was removed from `messages` (it is gone already).
    pub(super) fn removed<V>(&mut self, seq: u64, messages: &BTreeMap<u64, V>) {
        if let Self::ByHead { window, .. } = self {
            let Some(edge) = window.edge else { return };
            if messages.len() <= window.size {
                window.edge = None;
            } else if seq <= edge {
                window.edge = messages.range((Bound::Excluded(edge), Bound::Unbounded)).next().map(|(&s, _)| s);
            }
        }
    }

    pub(super) fn clear(&mut self) {
        match self {
            Self::Ring(ring) => ring.clear(),
            Self::ByHead { groups, window } => {
                groups.clear();
                window.edge = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(name: &str) -> GroupKey {
        GroupKey::parse(name).unwrap()
    }

    #[test]
    fn the_window_edge_follows_inserts_and_removals() {
        let mut ready = Ready::new(GroupScan::SqsFifo { window: 3 });
        let mut messages = BTreeMap::new();
        for seq in 1..=6 {
            messages.insert(seq, ());
            ready.inserted(&messages);
        }
        assert!(ready.sees(3) && !ready.sees(4));
        messages.remove(&2);
        ready.removed(2, &messages);
        assert!(ready.sees(4) && !ready.sees(5));
        messages.remove(&6);
        ready.removed(6, &messages);
        assert!(ready.sees(4) && !ready.sees(5), "a removal past the edge leaves it");
        messages.remove(&1);
        ready.removed(1, &messages);
        assert!(ready.sees(100), "three left: the window sees them all");
    }

    #[test]
    fn groups_come_by_head_within_the_window() {
        let mut ready = Ready::new(GroupScan::SqsFifo { window: 2 });
        let mut messages = BTreeMap::new();
        for seq in 1..=3 {
            messages.insert(seq, ());
            ready.inserted(&messages);
        }
        ready.join(group("late"), 3);
        ready.join(group("early"), 1);
        assert_eq!(ready.take_next(), Some(group("early")));
        assert_eq!(ready.take_next(), None, "message 3 lies beyond the window");
    }
}
