//! The embedded queue in memory: for unit tests and benchmarks. Everything
//! is lost with the process; `sluice dev` uses the Redis store.

mod fifo;

use crate::backend::{Pulled, QueueBackend, QueueInfo};
use crate::config::{QueueConfig, QueueKind};
use crate::error::QueueError;
use crate::receive_attempt::ReceiveAttemptId;
use crate::validation;
use fifo::{Fifo, now_ms};
use sluice_domain::queue::{Accepted, DelayedMessage, MessageId, OutgoingMessage, QueueAttributes, ReceiptHandle};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};
use tokio::sync::Notify;

/// Queues in this process's memory. Clones share the queues.
#[derive(Debug, Clone, Default)]
pub struct MemoryBackend {
    queues: Arc<Mutex<HashMap<String, Fifo>>>,
    signal: Arc<Notify>,
}

impl MemoryBackend {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Fifo>> {
        // A panic while holding the lock leaves no half-done change behind
        // (every operation checks before it changes), so carry on.
        self.queues.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn with<T>(&self, name: &str, f: impl FnOnce(&mut Fifo) -> Result<T, QueueError>) -> Result<T, QueueError> {
        let mut queues = self.lock();
        let fifo = queues.get_mut(name).ok_or_else(|| QueueError::QueueDoesNotExist(name.to_owned()))?;
        f(fifo)
    }

    /// [`with`](Self::with) for a change that may make a message
    /// receivable (a send; a delete, which can unblock a group; a
    /// visibility change): then it wakes the long polls.
    fn change<T>(&self, name: &str, f: impl FnOnce(&mut Fifo) -> Result<T, QueueError>) -> Result<T, QueueError> {
        let changed = self.with(name, f)?;
        self.signal.notify_waiters();
        Ok(changed)
    }
}

impl QueueBackend for MemoryBackend {
    async fn create_queue(&self, name: &str, config: &QueueConfig) -> Result<QueueInfo, QueueError> {
        validation::check_create(name, config)?;
        let config = &validation::normalized(name, config);
        let mut queues = self.lock();
        if let Some(existing) = queues.get(name) {
            validation::check_same(name, &existing.info.config, config)?;
            return Ok(existing.info.clone());
        }
        match &config.redrive {
            Some(policy) if !queues.contains_key(&policy.dead_letter_queue) => {
                return Err(validation::missing_dead_letter_queue(policy));
            }
            _ => {}
        }
        let info = QueueInfo {
            name: name.to_owned(),
            config: config.clone(),
            created_at: SystemTime::now(),
            incarnation: rand::random(),
        };
        queues.insert(name.to_owned(), Fifo::new(info.clone()));
        Ok(info)
    }

    async fn queue_info(&self, name: &str) -> Result<QueueInfo, QueueError> {
        self.with(name, |fifo| Ok(fifo.info.clone()))
    }

    async fn list_queues(&self) -> Result<Vec<String>, QueueError> {
        let mut names: Vec<String> = self.lock().keys().cloned().collect();
        names.sort();
        Ok(names)
    }

    async fn delete_queue(&self, name: &str) -> Result<(), QueueError> {
        self.lock().remove(name).map(drop).ok_or_else(|| QueueError::QueueDoesNotExist(name.to_owned()))
    }

    async fn purge_queue(&self, name: &str) -> Result<(), QueueError> {
        self.with(name, |fifo| {
            fifo.purge();
            Ok(())
        })
    }

    async fn send(&self, name: &str, entries: &[&OutgoingMessage]) -> Result<Vec<Accepted>, QueueError> {
        validation::check_kind(name, QueueKind::Fifo)?;
        self.change(name, |fifo| Ok(fifo.send(entries, now_ms())))
    }

    async fn send_delayed(&self, name: &str, entries: &[&DelayedMessage]) -> Result<Vec<MessageId>, QueueError> {
        validation::check_kind(name, QueueKind::Standard)?;
        self.change(name, |queue| Ok(queue.send_delayed(entries, now_ms())))
    }

    async fn pull_attempt(
        &self,
        name: &str,
        max: u8,
        visibility: Duration,
        attempt: Option<&ReceiveAttemptId>,
    ) -> Result<Pulled, QueueError> {
        let mut queues = self.lock();
        // Take the queue out so its dead-letter queue can be borrowed too.
        let mut source = queues.remove(name).ok_or_else(|| QueueError::QueueDoesNotExist(name.to_owned()))?;
        let dlq = source.info.config.redrive.as_ref().and_then(|p| queues.get_mut(&p.dead_letter_queue));
        let pulled = source.pull_attempt(attempt, max, visibility, now_ms(), dlq);
        queues.insert(name.to_owned(), source);
        pulled
    }

    async fn delete_message(&self, name: &str, receipt: &ReceiptHandle) -> Result<(), QueueError> {
        self.change(name, |fifo| fifo.delete(receipt, now_ms()))
    }

    async fn change_visibility(
        &self,
        name: &str,
        receipt: &ReceiptHandle,
        timeout: Duration,
    ) -> Result<(), QueueError> {
        self.change(name, |fifo| fifo.change_visibility(receipt, timeout, now_ms()))
    }

    async fn attributes(&self, name: &str) -> Result<QueueAttributes, QueueError> {
        self.with(name, |fifo| Ok(fifo.attributes(now_ms())))
    }

    async fn move_messages(&self, from: &str, to: &str, only_from: Option<&str>) -> Result<u64, QueueError> {
        validation::check_move(from, to)?;
        let moved = {
            let mut queues = self.lock();
            // Take the source out so the target can be borrowed too.
            let mut source = queues.remove(from).ok_or_else(|| QueueError::QueueDoesNotExist(from.to_owned()))?;
            let moved = match queues.get_mut(to) {
                Some(target) => Ok(source.move_to(target, only_from, now_ms())),
                None => Err(QueueError::QueueDoesNotExist(to.to_owned())),
            };
            queues.insert(from.to_owned(), source);
            moved?
        };
        self.signal.notify_waiters();
        Ok(moved)
    }

    fn signal(&self) -> &Arc<Notify> {
        &self.signal
    }
}
