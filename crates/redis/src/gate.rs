//! Gates: one event per key per window (seed 004's `SET NX EX`, without its
//! GET-then-SET race), and the two-phase form used for coalescing:
//!
//! 1. [`Gates::mark_pending`] at ingest: the first caller wins and enqueues
//!    the work; later callers learn it is already pending (and whose it is)
//!    and enqueue nothing.
//! 2. [`Gates::clear`] by the worker *before* it starts the work, so an event
//!    arriving during the work gets through again and is not lost.
//!
//! For coalescing with attribution, [`Gates::join_pending`] is the same
//! mark, but a caller that finds work pending is recorded as having joined
//! it, and [`Gates::take`] clears the owner's mark and hands it the ids that
//! joined, so the work can say which events it answered.
//!
//! Keys: `{prefix}{tag}:gate:<name>`, holding the passer's id, TTL = the
//! window, or the pending timeout after which a mark whose work never ran
//! lapses on its own; `{prefix}{tag}:joined:<name>`, the ids that joined
//! the pending work, TTL = the mark's remaining time plus one more timeout
//! (deleted by `take`). Scripts: `lua/gate_enter.lua`,
//! `lua/compare_and_delete.lua`, `lua/gate_join.lua`, `lua/gate_take.lua`.

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
    conn: C,
    keyspace: Keyspace,
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

    /// Like [`mark_pending`](Self::mark_pending), but a caller that finds
    /// the work pending is recorded as having joined it.
    pub async fn join_pending(&self, tag: &Tag, name: &str, id: &str, timeout: Duration) -> Result<Entry, Error> {
        let reply: Vec<Value> = scripts::GATE_JOIN
            .key(self.keyspace.key(tag, "gate", name))
            .key(self.keyspace.key(tag, "joined", name))
            .arg(id)
            .arg(ttl_ms(timeout)?)
            .invoke_async(&mut self.conn.clone())
            .await?;
        entry_from(reply, "gate_join.lua")
    }

    /// Clears `owner`'s pending mark just before its work starts and takes
    /// the ids that joined it. `Taken::NotOwner` when the mark has lapsed or
    /// belongs to someone else (then the joiners are left to that owner).
    pub async fn take(&self, tag: &Tag, name: &str, owner: &str) -> Result<Taken, Error> {
        let reply: Vec<Value> = scripts::GATE_TAKE
            .key(self.keyspace.key(tag, "gate", name))
            .key(self.keyspace.key(tag, "joined", name))
            .arg(owner)
            .invoke_async(&mut self.conn.clone())
            .await?;
        match reply.split_first() {
            Some((Value::Int(1), joined)) => Ok(Taken::Owned {
                joined: joined
                    .iter()
                    .map(redis::from_redis_value_ref)
                    .collect::<Result<_, _>>()
                    .map_err(redis::RedisError::from)?,
            }),
            Some((Value::Int(0), [])) => Ok(Taken::NotOwner { lapsed: true }),
            Some((Value::Int(-1), [])) => Ok(Taken::NotOwner { lapsed: false }),
            _ => Err(Error::UnexpectedReply { script: "gate_take.lua", reply: format!("{reply:?}") }),
        }
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

/// What [`Gates::take`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Taken {
    /// The caller owned the mark, now cleared; these ids had joined it.
    Owned { joined: Vec<String> },
    /// The caller does not own the mark: it lapsed (`lapsed`), or another
    /// owner holds it.
    NotOwner { lapsed: bool },
}

fn ttl_ms(ttl: Duration) -> Result<u64, Error> {
    let ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
    if ms == 0 {
        return Err(Error::Config(format!("gate window {ttl:?} is shorter than 1 ms")));
    }
    Ok(ms)
}

fn entry_from(reply: Vec<Value>, script: &'static str) -> Result<Entry, Error> {
    match reply.as_slice() {
        [Value::Int(1)] => Ok(Entry::Passed),
        [Value::Int(0), holder, Value::Int(pttl)] => Ok(Entry::Closed {
            holder: redis::from_redis_value_ref(holder).map_err(redis::RedisError::from)?,
            reopens_in: Duration::from_millis(u64::try_from(*pttl).unwrap_or(0)),
        }),
        other => Err(Error::UnexpectedReply { script, reply: format!("{other:?}") }),
    }
}
