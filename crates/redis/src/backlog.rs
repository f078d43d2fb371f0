//! Flow control per mall: no mall may hold more than a bounded number of
//! messages in the FIFO queue, however much it sends.
//!
//! SQS FIFO serves groups roughly in arrival order and scans only the first
//! 120,000 messages for a group it can deliver, so a mall that queues
//! 100,000 distinct product changes delays every mall behind it by hours,
//! while its own bucket (40 calls, 2/s) lets it through at 2 calls a second.
//! Coalescing does nothing for distinct resources. So once a mall has a
//! backlog, its webhooks stop becoming messages:
//!
//! ```text
//!                  queued < max_queued and no dirty resource
//!   webhook ──► claim ─────────────────────────────────────────► FIFO queue (one message per event)
//!                 │ otherwise (and no pending fetch to join)
//!                 ▼
//!           dirty set of mall M  (once per resource; event ids kept)
//!                 │ at most one chain per mall
//!                 ▼
//!   "catch up mall M" request ──► delay queue ──► catch-up run: as many dirty resources as the
//!          ▲                                   bucket allows now → fetch → store → leave the set
//!          └──────── next request, delayed by the bucket's wait, while the set is non-empty
//! ```
//!
//! - **Deciding** is part of the coalescing claim (`lua/gate_claim.lua`,
//!   [`Backlogs::admit`]): a pending fetch of the resource is still joined
//!   first; otherwise the event is deferred while the mall has
//!   `max_queued` messages counted in the queue or any dirty resource, so
//!   a mall leaves flow control only when its backlog is gone.
//! - **Counting**: the claim that lets an event through to the queue
//!   counts it in the same step, so a burst of concurrent webhooks cannot
//!   all slip under the threshold; a send that fails and the event's last
//!   step (store) take it out ([`Backlogs::left`]). An entry whose step
//!   died, or that was dead-lettered, is dropped by age (`queued_horizon`), so
//!   the count cannot stick.
//! - **The chain**: one key per mall names the catch-up request that will run
//!   next. Ingest that defers an event and finds no chain takes its lease,
//!   queues a request and confirms it ([`Backlogs::confirm_chain`]); a
//!   run's end ([`Backlogs::next`], `lua/catch_up_next.lua`) reads the set and
//!   the chain in one step, so a webhook deferred meanwhile is either seen
//!   by the run (which goes on) or finds no chain (and starts one). A lease
//!   whose holder died is carried by whoever comes next; a second chain
//!   started meanwhile stops at its first end.
//! - **Handing over** ([`Backlogs::hand_over`], `backlog/hand_over.rs`):
//!   a fetch step whose mall's bucket cannot serve it now puts its
//!   resource (with the events it answers) in the dirty set instead of
//!   holding a pipe while it waits, and stops counting its message.
//! - **Nothing is lost**: a resource leaves the set only after its snapshot
//!   is stored, and only if no webhook came for it since the run read it
//!   (`lua/dirty_done.lua`); a run that dies is retried by its queue. A
//!   request its queue dead-letters after maxReceiveCount leaves a confirmed
//!   chain that no run carries: deferred webhooks wait in the set until
//!   the chain key lapses (`chain_ttl`) and the next one starts a chain, or
//!   the dead-letter queue is redriven (its depth alarm says so).
//!
//! Keys, all under the mall's tag `{mall:<m>}`:
//!
//! ```text
//! {prefix}{mall:m}:queued:       ZSET   event id -> ms it was counted        TTL: queued_horizon after the latest change
//! {prefix}{mall:m}:dirty:        HASH   resource -> {seq, since, events}     owner: the mall's catch-up runs; TTL: retention
//! {prefix}{mall:m}:dirtyq:       ZSET   resource -> µs it became dirty        owner: the mall's catch-up runs; TTL: retention
//! {prefix}{mall:m}:chain:drain   STRING <token> | lease:<token>               TTL: the lease, then chain_ttl
//! ```

mod hand_over;

use crate::coalescing::{Coalescing, MarkTimes};
use crate::error::Error;
use crate::gate::ttl_ms;
use crate::keyspace::{Keyspace, Tag};
use crate::scripts;
use redis::Value;
use redis::aio::ConnectionLike;
use serde::Deserialize;
use std::time::Duration;

/// The thresholds of flow control.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowControl {
    /// Messages of one mall counted in the queue at which its webhooks are
    /// deferred into its dirty set instead.
    pub max_queued: u32,
    /// After this, a counted message no longer counts: its step died
    /// without leaving (SQS redelivers it within 5 receives × 330 s).
    pub queued_horizon: Duration,
    /// How long the dirty set outlives its latest change: SQS's longest
    /// retention, past which no catch-up request can still be queued.
    pub retention: Duration,
    /// Event ids kept per dirty resource for their traces; a resource
    /// edited more often while dirty answers the first ones only.
    pub events_per_resource: u32,
    /// How long a confirmed chain is trusted without a run refreshing it.
    pub chain_ttl: Duration,
}

impl Default for FlowControl {
    fn default() -> Self {
        Self {
            max_queued: 100,
            queued_horizon: Duration::from_secs(30 * 60),
            retention: Duration::from_secs(14 * 24 * 3600),
            events_per_resource: 100,
            chain_ttl: Duration::from_secs(60 * 60),
        }
    }
}

/// What the claim decided with flow control on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admit {
    /// As without flow control: enqueue (with or without the mark), join,
    /// or a duplicate.
    Claim(Coalescing),
    /// Recorded in the mall's dirty set, dirty since `since_ms`.
    Deferred { chain: Chain, since_ms: u64 },
}

/// Who will drain a deferred event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chain {
    /// The caller holds the chain's lease: queue a catch-up request, then
    /// [`Backlogs::confirm_chain`].
    Took,
    /// A confirmed chain's next run will see the event.
    Confirmed,
    /// Another caller's lease, which may never be confirmed: queue a drain
    /// request of the caller's own.
    OthersLease,
}

/// A script's chain code: 0 took the lease, 1 confirmed, 2 another's lease.
fn chain_of(code: i64) -> Chain {
    match code {
        0 => Chain::Took,
        1 => Chain::Confirmed,
        _ => Chain::OthersLease,
    }
}

/// One resource of a dirty set as a catch-up run read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirtyResource {
    /// Its name in the set: `<kind>:<id>`, as the coalescing gate names it.
    pub resource: String,
    /// Bumped by every webhook for it: a run removes it only unchanged.
    pub seq: u64,
    /// When it became dirty, ms since the epoch (Redis's clock).
    pub since_ms: u64,
    /// The events a snapshot fetched now answers.
    pub events: Vec<String>,
}

#[derive(Deserialize)]
struct EntryJson {
    seq: u64,
    since: u64,
    // cjson writes an empty array as `{}`.
    #[serde(default, deserialize_with = "events_or_empty")]
    events: Vec<String>,
}

fn events_or_empty<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    match serde_json::Value::deserialize(d)? {
        serde_json::Value::Array(items) => {
            Ok(items.into_iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
        }
        _ => Ok(Vec::new()),
    }
}

/// What a catch-up run's end decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChainNext {
    /// The set is empty: the chain ended.
    Idle,
    /// This run carries the chain: queue the next request, then confirm.
    Continue,
    /// Another confirmed chain carries it.
    Stop,
}

/// A mall's backlog now, for `sluice status` and the drain's metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BacklogSize {
    pub queued: u64,
    pub dirty: u64,
}

#[derive(Debug, Clone)]
pub struct Backlogs<C> {
    conn: C,
    keyspace: Keyspace,
    flow: FlowControl,
}

impl<C: ConnectionLike + Clone + Send> Backlogs<C> {
    pub fn new(conn: C, keyspace: Keyspace, flow: FlowControl) -> Result<Self, Error> {
        if flow.max_queued == 0 || flow.events_per_resource == 0 {
            return Err(Error::Config("flow control needs max_queued and events_per_resource of at least 1".into()));
        }
        for ttl in [flow.queued_horizon, flow.retention, flow.chain_ttl] {
            ttl_ms(ttl)?;
        }
        Ok(Self { conn, keyspace, flow })
    }

    pub fn flow(&self) -> &FlowControl {
        &self.flow
    }

    fn key(&self, tag: &Tag, kind: &str, name: &str) -> String {
        self.keyspace.key(tag, kind, name)
    }

    /// The coalescing claim of `lua/gate_claim.lua` with flow control: see
    /// [`Gates::claim`](crate::Gates::claim) for the claim's outcomes.
    pub async fn admit(
        &self,
        tag: &Tag,
        resource: &str,
        id: &str,
        may_start: bool,
        times: MarkTimes,
    ) -> Result<Admit, Error> {
        let reply: Vec<Value> = scripts::GATE_CLAIM
            .key(self.key(tag, "gate", resource))
            .key(self.key(tag, "joined", resource))
            .key(self.key(tag, "queued", ""))
            .key(self.key(tag, "dirty", ""))
            .key(self.key(tag, "dirtyq", ""))
            .key(self.key(tag, "chain", "drain"))
            .arg(id)
            .arg(ttl_ms(times.lease)?)
            .arg(ttl_ms(times.pending)?)
            .arg(if may_start { "1" } else { "0" })
            .arg(self.flow.max_queued)
            .arg(ttl_ms(self.flow.queued_horizon)?)
            .arg(ttl_ms(self.flow.retention)?)
            .arg(self.flow.events_per_resource)
            .arg(resource)
            .invoke_async(&mut self.conn.clone())
            .await?;
        match reply.as_slice() {
            [Value::Int(4), Value::Int(chain), Value::Int(since)] => {
                Ok(Admit::Deferred { chain: chain_of(*chain), since_ms: u64::try_from(*since).unwrap_or(0) })
            }
            other => crate::coalescing::claim_reply(other).map(Admit::Claim),
        }
    }

    /// `id`'s message was consumed (its last step ran), or its send
    /// failed: it no longer counts.
    pub async fn left(&self, tag: &Tag, id: &str) -> Result<(), Error> {
        let _: i64 =
            redis::cmd("ZREM").arg(self.key(tag, "queued", "")).arg(id).query_async(&mut self.conn.clone()).await?;
        Ok(())
    }

    /// `token`'s catch-up request is queued: the chain is confirmed. False
    /// when its lease was carried off by another run meanwhile (then that
    /// one drains, and this request's run stops at its end).
    pub async fn confirm_chain(&self, tag: &Tag, token: &str) -> Result<bool, Error> {
        let code: i64 = scripts::GATE_CONFIRM
            .key(self.key(tag, "chain", "drain"))
            .arg(token)
            .arg(ttl_ms(self.flow.chain_ttl)?)
            .invoke_async(&mut self.conn.clone())
            .await?;
        Ok(code == 1)
    }

    /// Takes the chain for `token`, whoever held it: a catch-up run must
    /// come now (a parked mall's new token, see `mall_park`), and a run
    /// of the chain it displaces stops at its end. Queue the request,
    /// then [`confirm_chain`](Self::confirm_chain).
    pub async fn take_chain(&self, tag: &Tag, token: &str, lease: Duration) -> Result<(), Error> {
        redis::cmd("SET")
            .arg(self.key(tag, "chain", "drain"))
            .arg(format!("lease:{token}"))
            .arg("PX")
            .arg(ttl_ms(lease)?)
            .exec_async(&mut self.conn.clone())
            .await?;
        Ok(())
    }

    /// Gives up `token`'s lease on the chain after its request could not
    /// be queued, so the next webhook starts one at once.
    pub async fn release_chain(&self, tag: &Tag, token: &str) -> Result<(), Error> {
        let _: i64 = scripts::COMPARE_AND_DELETE
            .key(self.key(tag, "chain", "drain"))
            .arg(format!("lease:{token}"))
            .invoke_async(&mut self.conn.clone())
            .await?;
        Ok(())
    }

    /// The `n` oldest dirty resources; nothing leaves the set here.
    pub async fn peek(&self, tag: &Tag, n: usize) -> Result<Vec<DirtyResource>, Error> {
        let reply: Vec<String> = scripts::DIRTY_PEEK
            .key(self.key(tag, "dirty", ""))
            .key(self.key(tag, "dirtyq", ""))
            .arg(n.max(1))
            .invoke_async(&mut self.conn.clone())
            .await?;
        reply
            .chunks_exact(2)
            .map(|pair| {
                let entry: EntryJson = serde_json::from_str(&pair[1]).map_err(|e| Error::UnexpectedReply {
                    script: "dirty_peek.lua",
                    reply: format!("{}: {e}", pair[1]),
                })?;
                Ok(DirtyResource {
                    resource: pair[0].clone(),
                    seq: entry.seq,
                    since_ms: entry.since,
                    events: entry.events,
                })
            })
            .collect()
    }

    /// The snapshots of `stored` are in their stream: each leaves the set
    /// unless a webhook came for it since it was read. Returns how many
    /// resources are left.
    pub async fn done(&self, tag: &Tag, stored: &[DirtyResource]) -> Result<u64, Error> {
        let mut script = scripts::DIRTY_DONE.key(self.key(tag, "dirty", ""));
        script.key(self.key(tag, "dirtyq", ""));
        for resource in stored {
            script.arg(&resource.resource).arg(resource.seq).arg(resource.events.len());
        }
        Ok(script.invoke_async(&mut self.conn.clone()).await?)
    }

    /// The end of run `token`: see [`ChainNext`]. On `Continue` the run
    /// holds the chain's lease for `lease`.
    pub async fn next(&self, tag: &Tag, token: &str, lease: Duration) -> Result<ChainNext, Error> {
        let code: i64 = scripts::CATCH_UP_NEXT
            .key(self.key(tag, "dirty", ""))
            .key(self.key(tag, "chain", "drain"))
            .key(self.key(tag, crate::mall_park::HELD, ""))
            .arg(token)
            .arg(ttl_ms(lease)?)
            .invoke_async(&mut self.conn.clone())
            .await?;
        match code {
            0 => Ok(ChainNext::Idle),
            1 => Ok(ChainNext::Continue),
            2 => Ok(ChainNext::Stop),
            other => Err(Error::UnexpectedReply { script: "catch_up_next.lua", reply: other.to_string() }),
        }
    }

    /// Whether the mall is under flow control now: any dirty resource, or
    /// `max_queued` messages counted (some may be past the horizon, which
    /// the next claim drops: a mall may count as in its backlog a little
    /// longer, never a flood as out of it).
    pub async fn in_backlog(&self, tag: &Tag) -> Result<bool, Error> {
        let size = self.size(tag).await?;
        Ok(size.dirty > 0 || size.queued >= u64::from(self.flow.max_queued))
    }

    /// The mall's backlog now (counted messages may include some past the
    /// horizon, dropped at the next claim).
    pub async fn size(&self, tag: &Tag) -> Result<BacklogSize, Error> {
        let (queued, dirty): (u64, u64) = redis::pipe()
            .zcard(self.key(tag, "queued", ""))
            .hlen(self.key(tag, "dirty", ""))
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(BacklogSize { queued, dirty })
    }
}
