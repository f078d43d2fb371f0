//! The consumer lease: which one process consumes a store's queues, so a
//! restarted consumer can return what its dead predecessor held at once
//! instead of after the visibility timeout (330 s for the pipe), without
//! ever taking messages a living consumer holds.
//!
//! # Why a lease
//!
//! A message in flight carries no owner: only its visibility timeout says
//! when it may be handed out again. After a crash that timeout is all the
//! queue knows, so the messages the dead process held (and their FIFO
//! groups) wait it out. Returning them early is safe only when nobody is
//! still working on them. The lease makes "nobody" checkable: one key,
//! `SET NX PX`, renewed every few seconds by its holder. Whoever holds it
//! is the only consumer, so every in-flight message belongs to it; a new
//! holder may therefore return all of them ([`RedisBackend::release_in_flight`],
//! which checks the lease in the same script).
//!
//! A starting consumer takes the lease:
//! - free: taken;
//! - held by a process of this host that is gone ([`LeaseOwner::is_verifiably_dead`]):
//!   taken over at once (the `kill -9` and restart case);
//! - held otherwise: it watches the key. A renewal (the TTL going up) proves
//!   a living holder: [`LeaseError::HeldByLiveConsumer`] at once. A holder
//!   that stops renewing loses the key after its TTL, and it is taken
//!   then. After [`LeaseSettings::wait_at_most`] it gives up
//!   ([`LeaseError::StillHeld`]).
//!
//! The holder renews every [`LeaseSettings::renew_every`]. It counts the
//! lease as its own only until `send time of the last renewal + TTL − a
//! margin`, by its own clock: Redis started the TTL after that send, so the
//! holder's view ends first. A backend fenced by the lease
//! ([`RedisBackend::fenced`]) refuses to receive once that moment passes,
//! so a holder cut off from Redis (or paused) takes no new messages after
//! another process may have taken over. What it already holds it may still
//! finish: the same limit SQS has for a consumer that outlives its
//! visibility timeout. Cut off for longer than the TTL (Redis restarted,
//! say), the holder finds the key gone at its next renewal and takes it
//! again, unless another consumer took it meanwhile: only then is the
//! lease lost ([`LeaseGuard::lost`]).
//!
//! # Layout
//!
//! ```text
//! {prefix}{<realm>}:consumer:lease  STRING  '<host>|<pid>|<token>'   TTL: LeaseSettings::ttl, renewed by the holder
//! ```
//!
//! Owner: the holder; it deletes the key on a clean stop
//! ([`ConsumerLease::release`]), and a dead holder's key expires by itself.
//! It shares the store's hash tag, so the release script reads it with the
//! queue's keys.

use super::RedisBackend;
use super::lease_owner::LeaseOwner;
use super::reply::Reply;
use super::scripts;
use crate::error::QueueError;
use redis::aio::ConnectionLike;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// Groups a release returns per script call, so no call holds Redis long.
const RELEASE_SLICE: u32 = 500;

/// How the lease is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseSettings {
    /// How long the key lives without a renewal: how long a consumer that
    /// died on another host (or in another pid namespace) blocks the next.
    pub ttl: Duration,
    pub renew_every: Duration,
    /// How long a starting consumer waits for a holder that is not
    /// verifiably dead to renew (then it refuses) or lapse (then it takes over).
    pub wait_at_most: Duration,
    /// How often a waiting consumer looks at the key.
    pub poll: Duration,
}

impl Default for LeaseSettings {
    fn default() -> Self {
        Self {
            ttl: Duration::from_secs(15),
            renew_every: Duration::from_secs(5),
            wait_at_most: Duration::from_secs(20),
            poll: Duration::from_millis(200),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    /// Another consumer renewed the lease while we waited: it is alive.
    #[error("another consumer ({holder}) is consuming these queues: it holds {key} and keeps renewing it")]
    HeldByLiveConsumer { key: String, holder: String },
    /// The lease neither lapsed nor was renewed in time.
    #[error("{key} is held by {holder} and did not lapse within {waited:?}")]
    StillHeld { key: String, holder: String, waited: Duration },
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    #[error(transparent)]
    Queue(#[from] QueueError),
}

/// What a held lease's renewals have established.
#[derive(Debug)]
struct LeaseState {
    valid_until: Mutex<Instant>,
    lost: AtomicBool,
    changed: Notify,
}

/// A view of a lease: whether it is still held. Clones share it.
#[derive(Debug, Clone)]
pub struct LeaseGuard(Arc<LeaseState>);

impl LeaseGuard {
    pub fn is_held(&self) -> bool {
        !self.0.lost.load(Ordering::SeqCst) && Instant::now() < self.valid_until()
    }

    fn valid_until(&self) -> Instant {
        *self.0.valid_until.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Returns once another consumer holds the lease. A lease this holder
    /// could not renew in time (Redis unreachable) is not held, so receives
    /// are fenced, but not lost: the next renewal that gets through takes
    /// it again if nobody else did, and the holder goes on.
    pub async fn lost(&self) {
        loop {
            let changed = self.0.changed.notified();
            if self.0.lost.load(Ordering::SeqCst) {
                return;
            }
            changed.await;
        }
    }
}

/// A held consumer lease. Dropping it stops the renewals without deleting
/// the key (as a crash would: it lapses after its TTL);
/// [`ConsumerLease::release`] gives it up at once.
#[derive(Debug)]
pub struct ConsumerLease<C> {
    backend: RedisBackend<C>,
    key: String,
    owner: LeaseOwner,
    previous: Option<String>,
    guard: LeaseGuard,
    renewals: JoinHandle<()>,
}

impl<C> ConsumerLease<C>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    pub fn key(&self) -> &str {
        &self.key
    }

    pub fn owner(&self) -> &LeaseOwner {
        &self.owner
    }

    /// The holder this lease was taken from (dead, or lapsed), if any.
    pub fn taken_from(&self) -> Option<&str> {
        self.previous.as_deref()
    }

    pub fn guard(&self) -> LeaseGuard {
        self.guard.clone()
    }

    /// Stops renewing and deletes the key if it is still ours.
    pub async fn release(self) {
        self.renewals.abort();
        if let Err(e) = self.backend.lease_op(&self.key, "release", &self.owner.encode(), Duration::ZERO, "").await {
            tracing::warn!(error = %e, "could not release the consumer lease (it lapses by itself)");
        }
    }
}

// Aborted, not cancelled: a renewal in the air when the lease is dropped
// (Redis away, its reconnects pending) must not finish later and mark the
// shared state lost after a new lease was taken; with a token it did, and
// `redis_away_longer_than_the_consumer_lease_does_not_stop_sluice_dev`
// lost 2,237 events.
impl<C> Drop for ConsumerLease<C> {
    fn drop(&mut self) {
        self.renewals.abort();
    }
}

impl<C> RedisBackend<C>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    /// This store's consumer lease key.
    pub fn lease_key(&self) -> String {
        self.keys.lease()
    }

    /// A backend whose receives fail ([`QueueError::ConsumerLeaseLost`])
    /// once `guard`'s lease is no longer held.
    pub fn fenced(mut self, guard: LeaseGuard) -> Self {
        self.fence = Some(guard);
        self
    }

    /// Takes the store's consumer lease as `owner` (see the module docs for
    /// when it waits and when it refuses) and keeps renewing it.
    pub async fn take_consumer_lease(
        &self,
        owner: LeaseOwner,
        settings: LeaseSettings,
    ) -> Result<ConsumerLease<C>, LeaseError> {
        let key = self.keys.lease();
        let me = owner.encode();
        let started = Instant::now();
        let deadline = started + settings.wait_at_most;
        // The holder we may replace (verified dead), and the last look at the key.
        let mut replaceable = String::new();
        let mut seen: Option<(String, i64, Instant)> = None;
        loop {
            let looked = Instant::now();
            let mut reply = self.lease_op(&key, "take", &me, settings.ttl, &replaceable).await?;
            if reply.string()? == "ok" {
                let previous = seen.map(|(holder, ..)| holder).or((!replaceable.is_empty()).then_some(replaceable));
                return Ok(self.start_renewals(key, owner, previous, settings, looked));
            }
            let holder = reply.string()?;
            let pttl = reply.int()?;
            let decoded = LeaseOwner::decode(&holder);
            let shown = decoded.as_ref().map_or_else(|| holder.clone(), ToString::to_string);
            if decoded.as_ref().is_some_and(LeaseOwner::is_verifiably_dead) {
                tracing::info!(holder = %shown, "taking over the consumer lease of a process that is gone");
                replaceable = holder;
                continue;
            }
            if let Some((before, before_pttl, at)) = &seen {
                // A TTL higher than the last one minus the time since means a renewal.
                let expected = before_pttl - i64::try_from(looked.duration_since(*at).as_millis()).unwrap_or(i64::MAX);
                let tolerance = i64::try_from((settings.renew_every / 2).as_millis()).unwrap_or(i64::MAX);
                if *before == holder && *before_pttl >= 0 && pttl > expected + tolerance {
                    return Err(LeaseError::HeldByLiveConsumer { key, holder: shown });
                }
            }
            if looked >= deadline {
                return Err(LeaseError::StillHeld { key, holder: shown, waited: settings.wait_at_most });
            }
            seen = Some((holder, pttl, looked));
            tokio::time::sleep(settings.poll.min(deadline.saturating_duration_since(looked))).await;
        }
    }

    fn start_renewals(
        &self,
        key: String,
        owner: LeaseOwner,
        previous: Option<String>,
        settings: LeaseSettings,
        sent: Instant,
    ) -> ConsumerLease<C> {
        // Our view of the lease ends a little before Redis's: clocks drift.
        let margin = settings.ttl / 10;
        let state = Arc::new(LeaseState {
            valid_until: Mutex::new(sent + settings.ttl - margin),
            lost: AtomicBool::new(false),
            changed: Notify::new(),
        });
        let guard = LeaseGuard(state.clone());
        let (backend, renew_key, me) = (self.clone(), key.clone(), owner.encode());
        let renewals = tokio::spawn(async move {
            let mut pause = settings.renew_every;
            loop {
                tokio::time::sleep(pause).await;
                let sent = Instant::now();
                match backend.renew(&renew_key, &me, settings.ttl).await {
                    Ok(true) => {
                        *state.valid_until.lock().unwrap_or_else(PoisonError::into_inner) =
                            sent + settings.ttl - margin;
                        pause = settings.renew_every;
                    }
                    Ok(false) => {
                        tracing::error!(key = %renew_key, "the consumer lease was taken over");
                        state.lost.store(true, Ordering::SeqCst);
                        state.changed.notify_waiters();
                        return;
                    }
                    // Still ours until valid_until (then fenced, not lost):
                    // try again soon, so receives resume soon after Redis does.
                    Err(e) => {
                        tracing::warn!(error = %e, "could not renew the consumer lease");
                        pause = settings.poll.min(settings.renew_every);
                    }
                }
                state.changed.notify_waiters();
            }
        });
        ConsumerLease { backend: self.clone(), key, owner, previous, guard, renewals }
    }

    /// Renews `me`'s lease: `Ok(true)` when held afterwards, `Ok(false)`
    /// when another consumer holds it. A lease that lapsed with nobody
    /// taking it (Redis was unreachable for longer than the TTL: the key
    /// expired inside Redis, or came back expired from its file) is taken
    /// again: nobody received from the queues meanwhile, since a consumer
    /// receives only while it holds the lease.
    async fn renew(&self, key: &str, me: &str, ttl: Duration) -> Result<bool, QueueError> {
        let mut reply = self.lease_op(key, "renew", me, ttl, "").await?;
        if reply.string()? == "ok" {
            return Ok(true);
        }
        if !reply.string()?.is_empty() {
            return Ok(false);
        }
        tracing::warn!(key, "the consumer lease lapsed (Redis unreachable for longer than its TTL): taking it again");
        Ok(self.lease_op(key, "take", me, ttl, "").await?.string()? == "ok")
    }

    async fn lease_op(
        &self,
        key: &str,
        op: &str,
        me: &str,
        ttl: Duration,
        replaceable: &str,
    ) -> Result<Reply, QueueError> {
        let mut invocation = scripts::LEASE.prepare_invoke();
        invocation.key(key).arg(op).arg(me).arg(super::millis(ttl).max(1)).arg(replaceable);
        Reply::new("lease.lua", invocation.invoke_async(&mut self.conn.clone()).await?)
    }

    /// Returns every received message in flight in queue `name` to visible
    /// (receive counts unchanged), as the holder of `lease`: what a consumer
    /// that took over does before it serves. Returns how many it returned.
    pub async fn release_in_flight(&self, name: &str, lease: &ConsumerLease<C>) -> Result<u64, QueueError> {
        let keys = self.keys.queue(name);
        let (mut rank, mut released) = (0u64, 0u64);
        loop {
            let mut invocation = scripts::RELEASE_IN_FLIGHT.prepare_invoke();
            invocation.key(&keys.core()).key(&lease.key).arg(lease.owner.encode()).arg(rank).arg(RELEASE_SLICE);
            let mut reply =
                Reply::new("release_in_flight.lua", invocation.invoke_async(&mut self.conn.clone()).await?)?;
            match reply.string()?.as_str() {
                "ok" => {}
                "notowner" => return Err(QueueError::ConsumerLeaseLost),
                "noqueue" => return Err(QueueError::QueueDoesNotExist(name.to_owned())),
                other => return Err(reply.unexpected(other)),
            }
            released += reply.u64()?;
            rank = reply.u64()?;
            if reply.int()? == 1 {
                if released > 0 {
                    self.signal.notify_waiters();
                }
                return Ok(released);
            }
        }
    }
}
