//! Gates: one event per key per window (`SET NX EX` inside a script, so no
//! GET-then-SET race), and the two-phase pending mark (a sheet's flush
//! request uses it):
//!
//! 1. [`Gates::mark_pending`] when work is asked for: the first caller wins
//!    and enqueues the work; later callers learn it is already pending (and
//!    whose it is) and enqueue nothing.
//! 2. [`Gates::clear`] by the worker *before* it starts the work, so an event
//!    arriving during the work gets through again and is not lost.
//!
//! Coalescing webhooks with attribution, where a mark starts as a lease and
//! others join only once it is confirmed, is [`coalescing`](crate::coalescing).
//!
//! Keys: `{prefix}{tag}:gate:<name>`, holding the passer's id, TTL = the
//! window, or the pending timeout after which a mark whose work never ran
//! lapses on its own. Scripts: `lua/gate_enter.lua`,
//! `lua/compare_and_delete.lua`.

use crate::error::Error;
use crate::keyspace::{Keyspace, Tag};
use crate::scripts;
use redis::Value;
use redis::aio::ConnectionLike;
use std::time::Duration;

/// The outcome of entering a gate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// This caller passed (or now owns the pending mark).
    Passed,
    /// Someone passed first: `holder` is the id they stored, and the gate
    /// reopens on its own after `reopens_in`.
    Closed { holder: String, reopens_in: Duration },
}

impl Entry {
    pub fn passed(&self) -> bool {
        matches!(self, Self::Passed)
    }
}

#[derive(Debug, Clone)]
pub struct Gates<C> {
    pub(crate) conn: C,
    pub(crate) keyspace: Keyspace,
}

impl<C: ConnectionLike + Clone + Send> Gates<C> {
    pub fn new(conn: C, keyspace: Keyspace) -> Self {
        Self { conn, keyspace }
    }

    /// Lets one caller through per `window` for this key.
    pub async fn pass(&self, tag: &Tag, name: &str, window: Duration) -> Result<Entry, Error> {
        self.enter(tag, name, "1", window).await
    }

    /// Marks work on this key as pending, owned by `owner`, unless it
    /// already is. The mark lapses after `timeout` if nobody clears it.
    pub async fn mark_pending(&self, tag: &Tag, name: &str, owner: &str, timeout: Duration) -> Result<Entry, Error> {
        self.enter(tag, name, owner, timeout).await
    }

    /// Clears `owner`'s pending mark. Returns false when there was none or
    /// it belongs to someone else now (their work is still to come).
    pub async fn clear(&self, tag: &Tag, name: &str, owner: &str) -> Result<bool, Error> {
        let code: i64 = scripts::COMPARE_AND_DELETE
            .key(self.keyspace.key(tag, "gate", name))
            .arg(owner)
            .invoke_async(&mut self.conn.clone())
            .await?;
        Ok(code == 1)
    }

    async fn enter(&self, tag: &Tag, name: &str, value: &str, ttl: Duration) -> Result<Entry, Error> {
        let reply: Vec<Value> = scripts::GATE_ENTER
            .key(self.keyspace.key(tag, "gate", name))
            .arg(value)
            .arg(ttl_ms(ttl)?)
            .invoke_async(&mut self.conn.clone())
            .await?;
        entry_from(reply, "gate_enter.lua")
    }
}

pub(crate) fn ttl_ms(ttl: Duration) -> Result<u64, Error> {
    let ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
    if ms == 0 {
        return Err(Error::Config(format!("gate window {ttl:?} is shorter than 1 ms")));
    }
    Ok(ms)
}

pub(crate) fn entry_from(reply: Vec<Value>, script: &'static str) -> Result<Entry, Error> {
    match reply.as_slice() {
        [Value::Int(1)] => Ok(Entry::Passed),
        [Value::Int(0), holder, Value::Int(pttl)] => Ok(Entry::Closed {
            holder: redis::from_redis_value_ref(holder).map_err(redis::RedisError::from)?,
            reopens_in: Duration::from_millis(u64::try_from(*pttl).unwrap_or(0)),
        }),
        other => Err(Error::UnexpectedReply { script, reply: format!("{other:?}") }),
    }
}
