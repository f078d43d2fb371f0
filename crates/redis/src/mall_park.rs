//! A parked mall: Cafe24 refused its refresh token (`invalid_grant`: revoked,
//! expired, or spent), answered its calls 403, or it never had a token, so
//! no call can succeed until a person stores a new one with `sluice
//! tokens set`. Its events wait here, in
//! arrival order, instead of failing one by one into the dead-letter queue.
//!
//! ```text
//!   event of mall M ──► token step: M parked? ─no─► fetch → store (as always)
//!                              │ yes (or the refresh was refused: park M, one alert)
//!                              ▼
//!                  M's held events (ZSET by arrival, item JSON beside)  ─► step succeeds, message deleted
//!                              │ `sluice tokens set M`: parked → releasing, "catch up mall M" queued
//!                              ▼
//!             catch-up run: oldest held event → token, fetch, store → leaves the set; … ; none left → parking ends
//! ```
//!
//! **Why in Redis, not left in the queue.** SQS counts every receive toward
//! the redrive policy's maxReceiveCount, so a message left in the queue to
//! wait for a person reaches the dead-letter queue however long its delays;
//! deleting and re-sending it puts it behind the later messages of its
//! FIFO group, and a re-send within five minutes under its deduplication id
//! is dropped. Held in Redis, under the mall's hash tag, the events keep
//! their order with no clock running against them, and a message is
//! deleted only after its event is held (the script runs before the step
//! answers), so a crash in between redelivers it and the parking recognises
//! it by its event id.
//!
//! **Order.** A FIFO group runs one item at a time, and every item of the
//! mall asks here first ([`ParkedMalls::check`]): once one event is held,
//! every later one of any of the mall's groups is held behind it, until
//! the set is empty again. The release takes the oldest first, one at a
//! time, and removes it only after its snapshot is stored, so a run that
//! dies sends it again (the store is idempotent per event). The end of a
//! release ([`ParkedMalls::done`], `lua/held_done.lua`) and the check are
//! each one script over the same keys: an event either joins the set
//! before the parking ends, and is released, or finds the mall not parked.
//!
//! Keys, all under the mall's tag `{mall:<m>}`:
//!
//! ```text
//! {prefix}{mall:m}:hold:      HASH   state (parked | releasing), reason, since (ms)   owner: `sluice tokens set` turns it to
//!                                    releasing; the catch-up run that releases the last held event deletes it
//! {prefix}{mall:m}:held:      ZSET   held event id -> arrival sequence                 owner: the release (catch-up runs)
//! {prefix}{mall:m}:heldbody:  HASH   held event id -> the item as the state machine had it (JSON)   owner: the release
//! {prefix}{mall:m}:heldseq:   STRING the last arrival sequence                         owner: deleted with the parking
//! ```
//!
//! The `hold` key keeps the name it had when this was called a mall's hold
//! (a parked mall's state; key layouts do not change with a word).
//!
//! None has a TTL: a parked mall's events must wait for the person however
//! long it takes (the sheet path's rows held for a rejected credential do
//! the same). `sluice tokens show` says a mall is parked and how many
//! events wait.

use crate::error::Error;
use crate::keyspace::{Keyspace, Tag};
use crate::scripts;
use redis::aio::ConnectionLike;

/// The held events' key kind, also read by `lua/catch_up_next.lua`'s caller.
pub(crate) const HELD: &str = "held";

/// What [`ParkedMalls::check`] or [`ParkedMalls::park`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parking {
    /// The event is held (the step must not fetch it).
    pub held: bool,
    /// The mall was not parked before: the one alert of the episode.
    pub newly_parked: bool,
    /// Events held for the mall now.
    pub count: u64,
}

/// A mall's parking as `sluice tokens show` and the catch-up run read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParkState {
    /// Parked (waiting for a person) or releasing (a new token is set).
    pub parked: bool,
    pub reason: String,
    pub since_ms: u64,
    pub held: u64,
}

/// One held event: its id and the item JSON it was held with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldEvent {
    pub event_id: String,
    pub item: String,
}

#[derive(Debug, Clone)]
pub struct ParkedMalls<C> {
    conn: C,
    keyspace: Keyspace,
}

impl<C: ConnectionLike + Clone + Send> ParkedMalls<C> {
    pub fn new(conn: C, keyspace: Keyspace) -> Self {
        Self { conn, keyspace }
    }

    fn key(&self, tag: &Tag, kind: &str) -> String {
        self.keyspace.key(tag, kind, "")
    }

    fn park_script(&self, tag: &Tag, script: &'static redis::Script) -> redis::ScriptInvocation<'static> {
        let mut invocation = script.key(self.key(tag, "hold"));
        invocation.key(self.key(tag, HELD)).key(self.key(tag, "heldbody")).key(self.key(tag, "heldseq"));
        invocation
    }

    /// Holds `event_id` if the mall is parked or releasing (events
    /// held before it).
    pub async fn check(&self, tag: &Tag, event_id: &str, item: &str) -> Result<Parking, Error> {
        let mut invocation = self.park_script(tag, &scripts::MALL_PARK);
        invocation.arg("check").arg(event_id).arg(item).arg("");
        parking_reply(invocation.invoke_async(&mut self.conn.clone()).await?)
    }

    /// Parks the mall (why: `reason`, which must hold no secret) and holds
    /// `event` (id, item JSON) if given.
    pub async fn park(&self, tag: &Tag, reason: &str, event: Option<(&str, &str)>) -> Result<Parking, Error> {
        let (id, item) = event.unwrap_or(("", ""));
        let mut invocation = self.park_script(tag, &scripts::MALL_PARK);
        invocation.arg("park").arg(id).arg(item).arg(reason);
        parking_reply(invocation.invoke_async(&mut self.conn.clone()).await?)
    }

    /// A new token is stored: a parked mall's held events may go. True
    /// when the mall was held (then a catch-up run must be asked for).
    pub async fn release(&self, tag: &Tag) -> Result<bool, Error> {
        let code: i64 = scripts::MALL_RELEASE.key(self.key(tag, "hold")).invoke_async(&mut self.conn.clone()).await?;
        Ok(code == 1)
    }

    /// The mall's parking, if it is parked or releasing.
    pub async fn state(&self, tag: &Tag) -> Result<Option<ParkState>, Error> {
        let ((state, reason, since), held): (ParkFields, u64) = redis::pipe()
            .hmget(self.key(tag, "hold"), &["state", "reason", "since"])
            .zcard(self.key(tag, HELD))
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(state.map(|state| ParkState {
            parked: state == "parked",
            reason: reason.unwrap_or_default(),
            since_ms: since.unwrap_or(0),
            held,
        }))
    }

    /// The oldest held event. Only the release removes events, one at a
    /// time under the mall's catch-up lock, so the two reads agree.
    pub async fn oldest(&self, tag: &Tag) -> Result<Option<HeldEvent>, Error> {
        let ids: Vec<String> =
            redis::cmd("ZRANGE").arg(self.key(tag, HELD)).arg(0).arg(0).query_async(&mut self.conn.clone()).await?;
        let Some(event_id) = ids.into_iter().next() else { return Ok(None) };
        let item: Option<String> = redis::cmd("HGET")
            .arg(self.key(tag, "heldbody"))
            .arg(&event_id)
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(Some(HeldEvent { event_id, item: item.unwrap_or_default() }))
    }

    /// `event_id` is released (`None`: only look). Returns (events still
    /// held, whether the parking ended now).
    pub async fn done(&self, tag: &Tag, event_id: Option<&str>) -> Result<(u64, bool), Error> {
        let mut invocation = self.park_script(tag, &scripts::HELD_DONE);
        invocation.arg(event_id.unwrap_or(""));
        let (left, ended): (u64, i64) = invocation.invoke_async(&mut self.conn.clone()).await?;
        Ok((left, ended == 1))
    }
}

/// The parking's state, reason and since, as HMGET reads them.
type ParkFields = (Option<String>, Option<String>, Option<u64>);

fn parking_reply(reply: (i64, i64, u64)) -> Result<Parking, Error> {
    let (held, newly, count) = reply;
    Ok(Parking { held: held == 1, newly_parked: newly == 1, count })
}
