//! The embedded queue in Redis: the default for `sluice dev`. Every
//! operation is one atomic Lua script (`lua/*.lua`); the key layout and who
//! owns each key is in the crate root. What a send or a delete answered is
//! in Redis before the answer leaves, so a killed process loses nothing it
//! acknowledged.

mod keys;
pub mod lease;
pub mod lease_owner;
mod receive_retry;
mod reply;
mod scripts;

use crate::backend::{Pulled, QueueBackend, QueueInfo};
use crate::config::{GroupScan, QueueConfig, QueueKind};
use crate::error::QueueError;
use crate::receipt::Receipt;
use crate::receive_attempt::ReceiveAttemptId;
use crate::validation;
use keys::StoreKeys;
use redis::Value;
use redis::aio::ConnectionLike;
use reply::{Reply, parse_settings, read_pulled, status};
use sluice_domain::queue::rules::{DEDUP_WINDOW, MAX_BATCH_ENTRIES};
use sluice_domain::queue::{Accepted, DelayedMessage, MessageId, OutgoingMessage, QueueAttributes, ReceiptHandle};
use sluice_redis::Keyspace;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::Notify;

/// The hash tag of a store's keys unless told otherwise.
pub const DEFAULT_REALM: &str = "sqs";
/// Messages a redrive moves per script call, so no call holds Redis long.
const MOVE_SLICE: u32 = 500;

/// Queues in Redis. Clones share the connection, the signal and the cache
/// of queue settings.
#[derive(Debug, Clone)]
pub struct RedisBackend<C> {
    conn: C,
    keys: Arc<StoreKeys>,
    /// Settings of queues used so far; the receive script checks the
    /// redrive policy against the stored one and asks for a reload.
    infos: Arc<Mutex<HashMap<String, QueueInfo>>>,
    signal: Arc<Notify>,
    /// Set by [`RedisBackend::fenced`]: receive only while this lease is held.
    fence: Option<lease::LeaseGuard>,
}

impl<C> RedisBackend<C>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    /// A store under `keyspace`, hash tag [`DEFAULT_REALM`].
    pub fn new(conn: C, keyspace: Keyspace) -> Self {
        Self::with_realm(conn, keyspace, DEFAULT_REALM)
    }

    /// A store whose keys share the hash tag `realm`.
    pub fn with_realm(conn: C, keyspace: Keyspace, realm: &str) -> Self {
        Self {
            conn,
            keys: Arc::new(StoreKeys::new(keyspace, realm)),
            infos: Arc::default(),
            signal: Arc::default(),
            fence: None,
        }
    }

    fn cached(&self, name: &str) -> Option<QueueInfo> {
        self.infos.lock().unwrap_or_else(PoisonError::into_inner).get(name).cloned()
    }

    fn remember(&self, info: &QueueInfo) {
        self.infos.lock().unwrap_or_else(PoisonError::into_inner).insert(info.name.clone(), info.clone());
    }

    fn forget(&self, name: &str) {
        self.infos.lock().unwrap_or_else(PoisonError::into_inner).remove(name);
    }

    async fn fetch_info(&self, name: &str) -> Result<QueueInfo, QueueError> {
        let cfg = self.keys.queue(name).cfg;
        let fields: Vec<Value> = redis::cmd("HMGET")
            .arg(&cfg)
            .arg(&["vis", "wait", "cbd", "dlq", "maxrc", "created", "inc", "delay", "scan", "window"])
            .query_async(&mut self.conn.clone())
            .await?;
        if fields.iter().all(|v| matches!(v, Value::Nil)) {
            self.forget(name);
            return Err(QueueError::QueueDoesNotExist(name.to_owned()));
        }
        let info = parse_settings(name, &mut Reply::new("HMGET cfg", Value::Array(fields))?)?;
        self.remember(&info);
        Ok(info)
    }

    async fn info(&self, name: &str) -> Result<QueueInfo, QueueError> {
        match self.cached(name) {
            Some(info) => Ok(info),
            None => self.fetch_info(name).await,
        }
    }

    async fn receipt_op(
        &self,
        name: &str,
        receipt: &ReceiptHandle,
        op: &str,
        timeout: Duration,
    ) -> Result<String, QueueError> {
        let r =
            Receipt::decode(receipt.as_str()).ok_or_else(|| QueueError::InvalidReceipt(receipt.as_str().to_owned()))?;
        let keys = self.keys.queue(name);
        let mut invocation = scripts::RECEIPT.prepare_invoke();
        invocation
            .key(&keys.core())
            .arg(op)
            .arg(format!("{:016x}", r.incarnation))
            .arg(r.seq)
            .arg(r.receive_count)
            .arg(millis(timeout));
        let answer = status("receipt.lua", invocation.invoke_async(&mut self.conn.clone()).await?)?;
        match answer.as_str() {
            "noqueue" => Err(QueueError::QueueDoesNotExist(name.to_owned())),
            "invalid" => Err(QueueError::InvalidReceipt(receipt.as_str().to_owned())),
            _ => Ok(answer),
        }
    }
}

impl<C> QueueBackend for RedisBackend<C>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    async fn create_queue(&self, name: &str, config: &QueueConfig) -> Result<QueueInfo, QueueError> {
        validation::check_create(name, config)?;
        let config = &validation::normalized(name, config);
        let keys = self.keys.queue(name);
        let mut invocation = scripts::CREATE_QUEUE.prepare_invoke();
        invocation.key(self.keys.registry()).key(&keys.cfg);
        let (dlq, max_receives) = match &config.redrive {
            Some(policy) => {
                invocation.key(self.keys.queue(&policy.dead_letter_queue).cfg);
                (policy.dead_letter_queue.as_str(), policy.max_receive_count)
            }
            None => ("", 0),
        };
        invocation
            .arg(name)
            .arg(millis(config.visibility_timeout))
            .arg(config.receive_wait.as_secs())
            .arg(u8::from(config.content_based_dedup))
            .arg(dlq)
            .arg(max_receives)
            .arg(format!("{:016x}", rand::random::<u64>()))
            .arg(millis(config.delay));
        match config.group_scan {
            GroupScan::RoundRobin => invocation.arg("rr").arg(0),
            GroupScan::SqsFifo { window } => invocation.arg("sqs").arg(window),
        };
        let mut reply = Reply::new("create_queue.lua", invocation.invoke_async(&mut self.conn.clone()).await?)?;
        let outcome = reply.string()?;
        if outcome == "nodlq" {
            return Err(config.redrive.as_ref().map_or_else(
                || reply.unexpected("nodlq without a redrive policy"),
                validation::missing_dead_letter_queue,
            ));
        }
        let info = parse_settings(name, &mut reply)?;
        if outcome == "exists" {
            validation::check_same(name, &info.config, config)?;
        }
        self.remember(&info);
        Ok(info)
    }

    async fn queue_info(&self, name: &str) -> Result<QueueInfo, QueueError> {
        self.fetch_info(name).await
    }

    async fn list_queues(&self) -> Result<Vec<String>, QueueError> {
        let mut names: Vec<String> =
            redis::cmd("SMEMBERS").arg(self.keys.registry()).query_async(&mut self.conn.clone()).await?;
        names.sort();
        Ok(names)
    }

    async fn delete_queue(&self, name: &str) -> Result<(), QueueError> {
        let keys = self.keys.queue(name);
        let mut invocation = scripts::DELETE_QUEUE.prepare_invoke();
        invocation.key(self.keys.registry()).key(keys.all()).arg(name);
        let deleted: i64 = invocation.invoke_async(&mut self.conn.clone()).await?;
        self.forget(name);
        if deleted == 0 {
            return Err(QueueError::QueueDoesNotExist(name.to_owned()));
        }
        Ok(())
    }

    async fn purge_queue(&self, name: &str) -> Result<(), QueueError> {
        let keys = self.keys.queue(name);
        let mut invocation = scripts::PURGE_QUEUE.prepare_invoke();
        invocation.key(&keys.cfg).key(&keys.message_keys());
        let purged: i64 = invocation.invoke_async(&mut self.conn.clone()).await?;
        if purged == 0 {
            return Err(QueueError::QueueDoesNotExist(name.to_owned()));
        }
        Ok(())
    }

    async fn send(&self, name: &str, entries: &[&OutgoingMessage]) -> Result<Vec<Accepted>, QueueError> {
        validation::check_kind(name, QueueKind::Fifo)?;
        let k = self.keys.queue(name);
        let mut invocation = scripts::SEND.prepare_invoke();
        invocation.key(&[&k.cfg, &k.body, &k.meta, &k.order, &k.arrival, &k.ready, &k.gstate, &k.dedup, &k.dedupx]);
        invocation.arg(millis(DEDUP_WINDOW));
        for entry in entries {
            invocation
                .arg(uuid::Uuid::new_v4().to_string())
                .arg(entry.group.as_str())
                .arg(entry.dedup.as_str())
                .arg(entry.body.as_str());
        }
        let mut reply = Reply::new("send.lua", invocation.invoke_async(&mut self.conn.clone()).await?)?;
        if reply.string()? == "noqueue" {
            return Err(QueueError::QueueDoesNotExist(name.to_owned()));
        }
        let mut accepted = Vec::with_capacity(entries.len());
        while reply.remaining() > 0 {
            let answer = reply.string()?;
            let (id, seq) = answer.split_once(' ').ok_or_else(|| reply.unexpected(&answer))?;
            accepted.push(Accepted { message_id: MessageId::new(id), sequence_number: seq.to_owned() });
        }
        if accepted.len() != entries.len() {
            return Err(reply.unexpected(format!("{} answers for {} messages", accepted.len(), entries.len())));
        }
        self.signal.notify_waiters();
        Ok(accepted)
    }

    async fn send_delayed(&self, name: &str, entries: &[&DelayedMessage]) -> Result<Vec<MessageId>, QueueError> {
        validation::check_kind(name, QueueKind::Standard)?;
        let mut invocation = scripts::SEND_DELAYED.prepare_invoke();
        invocation.key(&self.keys.queue(name).core());
        for entry in entries {
            // No delay of its own: '' lets the script apply the queue's.
            let delay = entry.delay.map(|d| millis(d).to_string()).unwrap_or_default();
            invocation.arg(uuid::Uuid::new_v4().to_string()).arg(delay).arg(entry.body.as_str());
        }
        let mut reply = Reply::new("send_delayed.lua", invocation.invoke_async(&mut self.conn.clone()).await?)?;
        if reply.string()? == "noqueue" {
            return Err(QueueError::QueueDoesNotExist(name.to_owned()));
        }
        let mut ids = Vec::with_capacity(entries.len());
        while reply.remaining() > 0 {
            ids.push(MessageId::new(reply.string()?));
        }
        if ids.len() != entries.len() {
            return Err(reply.unexpected(format!("{} answers for {} messages", ids.len(), entries.len())));
        }
        self.signal.notify_waiters();
        Ok(ids)
    }

    async fn pull_attempt(
        &self,
        name: &str,
        max: u8,
        visibility: Duration,
        attempt_id: Option<&ReceiveAttemptId>,
    ) -> Result<Pulled, QueueError> {
        if self.fence.as_ref().is_some_and(|guard| !guard.is_held()) {
            return Err(QueueError::ConsumerLeaseLost);
        }
        let attempt = receive_retry::Attempt::new(attempt_id, visibility);
        // Two tries: the second after reloading settings the script found stale.
        for _ in 0..2 {
            let info = self.info(name).await?;
            let keys = self.keys.queue(name);
            let mut invocation = scripts::RECEIVE.prepare_invoke();
            invocation.key(&keys.core());
            let dlq = info.config.redrive.as_ref().map_or("", |p| p.dead_letter_queue.as_str());
            if !dlq.is_empty() {
                invocation.key(&self.keys.queue(dlq).inbox());
            }
            // SQS returns at most ten messages a receive, whatever is asked.
            let max = usize::from(max).min(MAX_BATCH_ENTRIES);
            invocation.key(&keys.rx).key(&keys.rxx);
            invocation.arg(max).arg(millis(visibility)).arg(dlq).arg(name);
            attempt.add_args(&mut invocation);
            let answer = receive_retry::invoke_until_answered(&invocation, &self.conn).await?;
            let mut reply = Reply::new("receive.lua", answer)?;
            match reply.string()?.as_str() {
                "ok" => return read_pulled(&mut reply),
                "stale" => self.forget(name),
                "spent" => return Err(attempt.not_retryable()),
                "noqueue" => {
                    self.forget(name);
                    return Err(QueueError::QueueDoesNotExist(name.to_owned()));
                }
                other => return Err(reply.unexpected(other)),
            }
        }
        Err(QueueError::UnexpectedReply { script: "receive.lua", reply: "stale twice in a row".into() })
    }

    async fn delete_message(&self, name: &str, receipt: &ReceiptHandle) -> Result<(), QueueError> {
        self.receipt_op(name, receipt, "delete", Duration::ZERO).await?;
        // A delete can unblock a group: wake the long polls.
        self.signal.notify_waiters();
        Ok(())
    }

    async fn change_visibility(
        &self,
        name: &str,
        receipt: &ReceiptHandle,
        timeout: Duration,
    ) -> Result<(), QueueError> {
        match self.receipt_op(name, receipt, "visibility", timeout).await?.as_str() {
            "ok" => {
                self.signal.notify_waiters();
                Ok(())
            }
            _ => Err(QueueError::NotInFlight),
        }
    }

    async fn attributes(&self, name: &str) -> Result<QueueAttributes, QueueError> {
        let k = self.keys.queue(name);
        let mut invocation = scripts::ATTRIBUTES.prepare_invoke();
        invocation.key(&[&k.cfg, &k.meta, &k.order, &k.arrival, &k.blocked]);
        let value: Value = invocation.invoke_async(&mut self.conn.clone()).await?;
        if !matches!(value, Value::Array(_)) {
            let answer = status("attributes.lua", value)?;
            return Err(if answer == "noqueue" {
                QueueError::QueueDoesNotExist(name.to_owned())
            } else {
                QueueError::UnexpectedReply { script: "attributes.lua", reply: answer }
            });
        }
        let mut reply = Reply::new("attributes.lua", value)?;
        let total = reply.u64()?;
        let in_flight = reply.u64()?;
        let age = reply.int()?;
        let delayed = reply.u64()?;
        Ok(QueueAttributes {
            visible: total.saturating_sub(in_flight).saturating_sub(delayed),
            in_flight,
            delayed,
            oldest_age: u64::try_from(age).ok().map(Duration::from_millis),
        })
    }

    async fn move_messages(&self, from: &str, to: &str, only_from: Option<&str>) -> Result<u64, QueueError> {
        validation::check_move(from, to)?;
        let (source, target) = (self.keys.queue(from), self.keys.queue(to));
        let mut cursor = 0u64;
        let mut moved = 0u64;
        loop {
            let mut invocation = scripts::MOVE_MESSAGES.prepare_invoke();
            invocation.key(&source.core()).key(&target.inbox());
            invocation.arg(only_from.unwrap_or("")).arg(cursor).arg(MOVE_SLICE);
            let mut reply = Reply::new("move_messages.lua", invocation.invoke_async(&mut self.conn.clone()).await?)?;
            match reply.string()?.as_str() {
                "ok" => {}
                "noqueue" => {
                    let missing = if reply.int()? == 1 { from } else { to };
                    return Err(QueueError::QueueDoesNotExist(missing.to_owned()));
                }
                other => return Err(reply.unexpected(other)),
            }
            moved += reply.u64()?;
            cursor = reply.u64()?;
            if moved > 0 {
                self.signal.notify_waiters();
            }
            if reply.int()? == 1 {
                return Ok(moved);
            }
        }
    }

    fn signal(&self) -> &Arc<Notify> {
        &self.signal
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
