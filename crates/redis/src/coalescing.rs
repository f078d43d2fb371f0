//! Coalescing with attribution: a resource's pending mark, so that a webhook
//! for a resource whose fetch is still to come joins that fetch instead of
//! being enqueued again, and the fetch can say which events it answered.
//!
//! The mark is only worth joining if a fetch will come. A mark set before
//! the owner's message reached the queue names a fetch that may never come
//! (the process dies in between, the Lambda times out). So a mark starts as
//! a **lease** as long as one request may take, and is **confirmed** only
//! once the queue took the owner's message:
//!
//! 1. [`Gates::claim`] at ingest: with no mark, the caller takes the lease
//!    ([`Coalescing::Owner`]); finding a confirmed mark, it joins
//!    ([`Coalescing::Joined`]); finding someone else's lease, it enqueues
//!    its own message and marks nothing ([`Coalescing::Unmarked`]).
//! 2. [`Gates::confirm`] once the queue took the owner's message: the lease
//!    becomes the mark, kept for the pending timeout.
//! 3. [`Gates::take`] by the fetch, just before it reads upstream: clears
//!    the mark (leased or confirmed) and hands over the ids that joined.
//!
//! A lease whose owner died ends on its own, and the next webhook takes the
//! mark. Only a delivery's first attempt may start a mark (see
//! `lua/gate_claim.lua` for why).
//!
//! Keys: `{prefix}{tag}:gate:<name>`, `<owner id>` or `lease:<owner id>`,
//! TTL = the lease, then the pending timeout; `{prefix}{tag}:joined:<name>`,
//! the ids that joined, TTL = the mark's remaining time plus one more
//! timeout (deleted by `take`); `{prefix}{tag}:taken:<owner id>`, the ids
//! an owner took, TTL = [`TAKEN_TTL`], so a redelivery of an owner whose
//! work died after `take` answers them still. Scripts: `lua/gate_claim.lua`,
//! `lua/gate_confirm.lua`, `lua/gate_take.lua`, `lua/compare_and_delete.lua`.

use crate::error::Error;
use crate::gate::{Gates, ttl_ms};
use crate::keyspace::Tag;
use crate::scripts;
use redis::Value;
use redis::aio::ConnectionLike;
use std::time::Duration;

/// What [`Gates::claim`] decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Coalescing {
    /// The caller holds the mark's lease: enqueue, then [`Gates::confirm`].
    Owner,
    /// Enqueue without a mark: another event's enqueue is unconfirmed, or
    /// the caller may not start a mark.
    Unmarked,
    /// The caller's own mark is confirmed: its message is in the queue.
    OwnMarkConfirmed,
    /// The caller joined `owner`'s pending fetch, which starts within
    /// `reopens_in` or the mark lapses.
    Joined { owner: String, reopens_in: Duration },
}

/// What [`Gates::take`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Taken {
    /// The caller owned the mark, now cleared; these ids had joined it
    /// (with any an earlier attempt of the same owner took).
    Owned { joined: Vec<String> },
    /// The caller does not own the mark: it lapsed (`lapsed`), or another
    /// owner holds it. `joined`: ids an earlier attempt of this owner took,
    /// whose work died before answering them.
    NotOwner { lapsed: bool, joined: Vec<String> },
}

impl Taken {
    /// Every id the caller's work answers besides its own.
    pub fn joined(&self) -> &[String] {
        match self {
            Self::Owned { joined } | Self::NotOwner { joined, .. } => joined,
        }
    }
}

/// How long an owner's taken ids are kept: past every redelivery of its
/// message (the template's 5 receives × 330 s visibility is 27.5 min).
pub const TAKEN_TTL: Duration = Duration::from_secs(60 * 60);

/// How long a mark is held before and after its owner's enqueue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MarkTimes {
    /// Until the owner's enqueue is confirmed.
    pub lease: Duration,
    /// After it: how long the mark waits for its fetch.
    pub pending: Duration,
}

impl<C: ConnectionLike + Clone + Send> Gates<C> {
    /// Claims the resource's mark for `id`, joins a confirmed one, or says
    /// to enqueue without one. `may_start`: whether `id` may start a new
    /// mark (a delivery's first attempt).
    pub async fn claim(
        &self,
        tag: &Tag,
        name: &str,
        id: &str,
        may_start: bool,
        times: MarkTimes,
    ) -> Result<Coalescing, Error> {
        let reply: Vec<Value> = scripts::GATE_CLAIM
            .key(self.keyspace.key(tag, "gate", name))
            .key(self.keyspace.key(tag, "joined", name))
            .arg(id)
            .arg(ttl_ms(times.lease)?)
            .arg(ttl_ms(times.pending)?)
            .arg(if may_start { "1" } else { "0" })
            .invoke_async(&mut self.conn.clone())
            .await?;
        claim_reply(&reply)
    }

    /// Turns `owner`'s lease into the mark once its message is in the
    /// queue. False when the lease is gone (the fetch took it already, or
    /// it ended): nothing is marked then, and nobody will join.
    pub async fn confirm(&self, tag: &Tag, name: &str, owner: &str, pending: Duration) -> Result<bool, Error> {
        let code: i64 = scripts::GATE_CONFIRM
            .key(self.keyspace.key(tag, "gate", name))
            .arg(owner)
            .arg(ttl_ms(pending)?)
            .invoke_async(&mut self.conn.clone())
            .await?;
        Ok(code == 1)
    }

    /// Gives up `owner`'s lease after its enqueue failed, so the next
    /// webhook for the resource need not wait for it to end.
    pub async fn release(&self, tag: &Tag, name: &str, owner: &str) -> Result<bool, Error> {
        self.clear(tag, name, &format!("lease:{owner}")).await
    }

    /// Clears `owner`'s pending mark just before its work starts and takes
    /// the ids that joined it. `Taken::NotOwner` when the mark has lapsed or
    /// belongs to someone else (then the joiners are left to that owner).
    pub async fn take(&self, tag: &Tag, name: &str, owner: &str) -> Result<Taken, Error> {
        let reply: Vec<Value> = scripts::GATE_TAKE
            .key(self.keyspace.key(tag, "gate", name))
            .key(self.keyspace.key(tag, "joined", name))
            .key(self.keyspace.key(tag, "taken", owner))
            .arg(owner)
            .arg(ttl_ms(TAKEN_TTL)?)
            .invoke_async(&mut self.conn.clone())
            .await?;
        let ids = |values: &[Value]| -> Result<Vec<String>, Error> {
            values
                .iter()
                .map(redis::from_redis_value_ref)
                .collect::<Result<_, _>>()
                .map_err(|e| redis::RedisError::from(e).into())
        };
        match reply.split_first() {
            Some((Value::Int(1), joined)) => Ok(Taken::Owned { joined: ids(joined)? }),
            Some((Value::Int(0), joined)) => Ok(Taken::NotOwner { lapsed: true, joined: ids(joined)? }),
            Some((Value::Int(-1), joined)) => Ok(Taken::NotOwner { lapsed: false, joined: ids(joined)? }),
            _ => Err(Error::UnexpectedReply { script: "gate_take.lua", reply: format!("{reply:?}") }),
        }
    }
}

/// Reads `lua/gate_claim.lua`'s claim outcomes (shared with flow control,
/// whose deferral the same script decides).
pub(crate) fn claim_reply(reply: &[Value]) -> Result<Coalescing, Error> {
    match reply {
        [Value::Int(1)] => Ok(Coalescing::Owner),
        [Value::Int(2)] => Ok(Coalescing::Unmarked),
        [Value::Int(3)] => Ok(Coalescing::OwnMarkConfirmed),
        [Value::Int(0), owner, Value::Int(pttl)] => Ok(Coalescing::Joined {
            owner: redis::from_redis_value_ref(owner).map_err(redis::RedisError::from)?,
            reopens_in: Duration::from_millis(u64::try_from(*pttl).unwrap_or(0)),
        }),
        other => Err(Error::UnexpectedReply { script: "gate_claim.lua", reply: format!("{other:?}") }),
    }
}
