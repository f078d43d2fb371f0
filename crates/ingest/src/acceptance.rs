//! The effects of a valid webhook, in order, and why no crash between
//! them can lose an event that was answered `202`.
//!
//! 1. **Delivery** `{prefix}{ev:<event id>}:gate:ingest`
//!    ([`Deliveries`](sluice_redis::Deliveries)): this attempt takes a
//!    lease on the delivery, as long as one request may take
//!    (`accept_lease`, 10 s by default). Accepted already →
//!    `duplicate`. Another attempt's lease still running → 503
//!    `delivery_in_progress` (the sender retries; a dead attempt holds it up
//!    for one lease at most). An earlier attempt's lease ended unsettled →
//!    this attempt is a *retry*: the earlier one may or may not have reached
//!    the queue.
//! 2. Trace `received`, in the same call as 1 (both under the event's
//!    hash tag).
//! 3. **Coalescing** `{prefix}{mall:<mall>}:gate:<kind>:<id>`
//!    ([`Gates::claim`](sluice_redis::Gates::claim)): a *confirmed* mark
//!    means a fetch of this resource is in the queue and still to come:
//!    join it → `coalesced`. The event's own confirmed mark → `duplicate`.
//!    No mark, and this is a first attempt → take the mark as a lease.
//!    Otherwise (another event's lease, or a retry finding no mark) →
//!    enqueue without a mark. With flow control, a mall with a backlog
//!    defers instead of enqueueing (see `sluice_redis::backlog`): the
//!    event goes to the mall's dirty set, answered `deferred` once a drain
//!    request is sure to see it; an event let through is counted toward
//!    the mall's backlog in the same step.
//! 4. **Enqueue** through the batcher. Accepted → at once, side by side:
//!    confirm the mark (lease → mark for the pending timeout), enter the
//!    event in its group's ledger (`sluice status`), settle the delivery
//!    as accepted and trace `enqueued` (one call) → `enqueued`. Each of these only
//!    shortens what a later request must do; none is needed for safety.
//!
//! # Why a crash loses nothing
//!
//! A `202` is sent only after the queue took the event's message, or after
//! the event joined a confirmed mark. Whatever else a dead request leaves
//! behind lapses, and nothing it leaves makes a later webhook vanish:
//!
//! - A webhook is answered `coalesced` only into a confirmed mark, and a
//!   mark is confirmed only after its owner's message is in the queue. The
//!   fetch clears the mark before it reads upstream, so a joiner is always
//!   answered by a fetch that starts after it arrived. A lease left by a
//!   dead request is never joined: webhooks for the resource are enqueued
//!   on their own until it ends, and then the next one takes the mark.
//! - A `duplicate` answer needs the delivery settled (set only after the
//!   event was enqueued or joined) or the event's own confirmed mark.
//! - A retry whose earlier attempt died after the queue took its message
//!   sends it again; SQS drops the copy as a duplicate (same deduplication
//!   id, within its 5 minutes). Such a copy must not start a mark, which
//!   no fetch would then clear: only a first attempt may start one (a
//!   retry may take over its own event's lease, whose message is either
//!   still to be fetched or was never sent).
//! - The delivery gate outlives SQS's deduplication window by one lease,
//!   and an attempt gives up rather than send once half its lease is gone,
//!   so a "first" attempt never follows a send of the same event that SQS
//!   would still drop.
//! - A dead request's delivery lease ends after `accept_lease`; the
//!   sender's retry is answered 503 until then, never `duplicate`.
//!
//! A failure this request sees and reports (the queue refuses, Redis
//! fails) gives up its leases at once, so the sender's retry need not wait,
//! and answers 5xx (or 400 when the queue calls the entry itself wrong);
//! the trace says `rejected` and why. Trace writes after the decision are
//! best effort: the answer follows what the gates and the queue did, and a
//! failed trace write is counted and logged.

use crate::batcher::Batcher;
use crate::counters::Counters;
use crate::rejection::{ErrorCode, Rejection};
use crate::tenants::{Tenant, TenantCheck};
use redis::aio::ConnectionLike;
use serde::Serialize;
use serde_json::json;
use sluice_domain::queue::SendOutcome;
use sluice_domain::{CatchUpRequests, GroupKey, ShopWork};
use sluice_redis::{
    Admit, Attempt, Backlogs, Begun, Chain, Coalescing, Deliveries, Gates, GroupLedger, MarkTimes, SheetBuffers, Tag,
    Traces,
};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Trace stages written by ingest.
pub mod stages {
    pub const RECEIVED: &str = "received";
    pub const DUPLICATE: &str = "duplicate";
    pub const COALESCED: &str = "coalesced";
    pub const ENQUEUED: &str = "enqueued";
    pub const REJECTED: &str = "rejected";
    pub const DEFERRED: &str = "deferred";
}

/// What became of an accepted webhook.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The queue took its message.
    Enqueued,
    /// It joined the pending fetch of the same resource.
    Coalesced,
    /// A redelivery of an event already accepted.
    Duplicate,
    /// Flow control: its mall has a backlog, and the resource is in the
    /// mall's dirty set, drained within the mall's budget; or its sheet
    /// has a backlog, and the row is in the sheet's overflow, which joins
    /// the sheet's buffer behind the rows already queued.
    Deferred,
}

/// The 202 body: `{"event_ids": [...], "status": "...", "into"?: "..."}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Receipt {
    pub event_ids: Vec<String>,
    pub status: Status,
    /// For `coalesced`: the event whose pending fetch this one joined.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub into: Option<String>,
}

/// What acceptance needs: the Redis primitives, the batcher and settings.
#[derive(Debug)]
pub(crate) struct Acceptor<C> {
    pub(crate) deliveries: Deliveries<C>,
    pub(crate) gates: Gates<C>,
    pub(crate) traces: Traces<C>,
    pub(crate) groups: GroupLedger<C>,
    pub(crate) batcher: Batcher,
    pub(crate) counters: std::sync::Arc<Counters>,
    pub(crate) marks: MarkTimes,
    /// How long the Redis work before the send may take: the config's
    /// accept deadline, at most half the lease.
    pub(crate) deadline: Duration,
    /// Flow control per mall, when a drain queue is configured.
    pub(crate) flow: Option<FlowControlPort<C>>,
    /// The sheets' overflows and queued counts: flow control per sheet.
    pub(crate) sheets: SheetBuffers<C>,
    /// Which malls and credentials are tenants (see `tenants`).
    pub(crate) tenants: TenantCheck<C>,
}

/// What deferring needs: the backlog keys and where catch-up requests go.
#[derive(Debug)]
pub(crate) struct FlowControlPort<C> {
    pub(crate) backlogs: Backlogs<C>,
    pub(crate) requests: Arc<dyn CatchUpRequests>,
}

impl<C: ConnectionLike + Clone + Send + Sync> Acceptor<C> {
    pub(crate) async fn accept(&self, work: ShopWork) -> Result<Receipt, Rejection> {
        let id = work.event_id.as_str();
        let started = Instant::now();
        // Before any key is written: an invented mall leaves nothing.
        self.tenants.check(Tenant::Mall(&work.event.mall_id)).await?;
        // The delivery's lease and the `received` entry (or `duplicate`)
        // in one call: both sit under the event's hash tag.
        let received = json!({
            "mall_id": work.event.mall_id,
            "topic": work.event.topic,
            "resource": work.resource_gate(),
            "delivery_id": work.event.delivery_id,
        });
        let received = received.as_object().expect("a JSON object");
        let (attempt, first) = match self.deliveries.begin_traced(id, &self.traces.slot(id), received).await {
            Ok(Begun::First(attempt)) => (attempt, true),
            Ok(Begun::Retry(attempt)) => (attempt, false),
            Ok(Begun::InProgress { ends_in }) => return Err(in_progress(ends_in)),
            Ok(Begun::Accepted) => return Ok(receipt(&work, Status::Duplicate, None)),
            Err(e) => return Err(store_unavailable("checking for a duplicate delivery", &e)),
        };
        let mut undo = Undo { acceptor: self, work: &work, attempt: &attempt, leased: false };

        let mall_tag = Tag::for_mall(&work.event.mall_id);
        let gate = work.resource_gate();
        let claimed = match &self.flow {
            Some(flow) => match flow.backlogs.admit(&mall_tag, &gate, id, first, self.marks).await {
                Ok(Admit::Claim(claimed)) => Ok(claimed),
                Ok(Admit::Deferred { chain, since_ms }) => return self.defer(flow, &work, undo, chain, since_ms).await,
                Err(e) => Err(e),
            },
            None => self.gates.claim(&mall_tag, &gate, id, first, self.marks).await,
        };
        let claimed = match claimed {
            Ok(claimed) => claimed,
            Err(e) => return Err(undo.run(store_unavailable("checking for a pending fetch", &e)).await),
        };
        match claimed {
            Coalescing::Owner => undo.leased = true,
            Coalescing::Unmarked => {}
            Coalescing::OwnMarkConfirmed => {
                self.settle(id, stages::DUPLICATE, &json!({"pending_fetch": true})).await;
                return Ok(receipt(&work, Status::Duplicate, None));
            }
            Coalescing::Joined { owner, .. } => {
                self.settle(id, stages::COALESCED, &json!({"into": owner})).await;
                return Ok(receipt(&work, Status::Coalesced, Some(owner)));
            }
        }

        // Past its deadline (at most half its lease, past which another
        // attempt may have taken over and sending now could follow its
        // send: see the module docs) the request gives up rather than hold
        // the sender while Redis is slow.
        if started.elapsed() >= self.deadline {
            return Err(undo.run(past_deadline(self.deadline, "webhook")).await);
        }
        match self.batcher.send(work.to_message()).await {
            SendOutcome::Accepted(accepted) => {
                let detail = json!({
                    "message_id": accepted.message_id.as_str(),
                    "sequence_number": accepted.sequence_number,
                    "marked": undo.leased,
                });
                // Independent writes, any subset of which a crash may leave
                // undone (see the module docs), under three hash tags (the
                // mall's, the ledger shard's, the event's): side by side, so
                // one round trip of waiting, not three.
                let (group, about) = (work.event.group_key(), work.event.group_about());
                tokio::join!(
                    async {
                        if undo.leased {
                            self.confirm(&work).await;
                        }
                    },
                    self.enter_group(&group, &about, id),
                    self.settle(id, stages::ENQUEUED, &detail),
                );
                Ok(receipt(&work, Status::Enqueued, None))
            }
            SendOutcome::Failed(failure) => {
                let (code, what) = if failure.sender_fault {
                    (ErrorCode::QueueRefused, "the queue refused the message")
                } else {
                    (ErrorCode::QueueUnavailable, "the queue did not take the message")
                };
                let message = format!("{what} ({}: {}); nothing was kept", failure.code, failure.message);
                Err(undo.run(Rejection::new(code, message)).await)
            }
        }
    }

    /// The mall has a backlog: the event is in its dirty set already (see
    /// `sluice_redis::backlog`). It is answered `202` only once a drain
    /// request will see it: a confirmed chain's, or one this request
    /// queued itself. If that cannot be queued, the answer is 503 and the
    /// sender's retry defers it again (the dirty entry it left is drained
    /// by the mall's next chain: fetched once more, never lost).
    async fn defer(
        &self,
        flow: &FlowControlPort<C>,
        work: &ShopWork,
        undo: Undo<'_, C>,
        chain: Chain,
        since_ms: u64,
    ) -> Result<Receipt, Rejection> {
        let id = work.event_id.as_str();
        let mall = &work.event.mall_id;
        if let Err(e) = flow.backlogs.request_catch_up(flow.requests.as_ref(), mall, id, chain).await {
            let message = format!("the mall's catch-up request was not queued ({}); send it again", e.cause);
            return Err(undo.run(Rejection::new(ErrorCode::QueueUnavailable, message)).await);
        }
        let detail = json!({"mall_id": mall, "resource": work.resource_gate(), "dirty_since_ms": since_ms});
        self.settle(id, stages::DEFERRED, &detail).await;
        Ok(receipt(work, Status::Deferred, None))
    }

    /// The owner's message is in the queue: others may join its fetch now.
    async fn confirm(&self, work: &ShopWork) {
        let tag = Tag::for_mall(&work.event.mall_id);
        if let Err(e) = self.gates.confirm(&tag, &work.resource_gate(), &work.event_id, self.marks.pending).await {
            // The lease ends on its own; until then webhooks for the
            // resource are enqueued on their own, never lost.
            tracing::warn!(event_id = %work.event_id, error = %e, "could not confirm the coalescing mark");
        }
    }

    /// The event is accepted: later deliveries of it are duplicates, and
    /// its trace says how (`stage`), in the same call.
    async fn settle(&self, id: &str, stage: &str, detail: &serde_json::Value) {
        if let Err(e) = self.deliveries.settle_traced(id, &self.traces.slot(id), stage, detail).await {
            // A redelivery is answered 503 until the lease ends, then taken
            // as a retry: enqueued again, which the queue drops as a
            // duplicate within its window (or fetched once more after it).
            self.counters.trace_failed();
            tracing::warn!(event_id = id, stage, error = %e, "could not settle the delivery nor write its trace entry");
        }
    }

    /// Counts the event as waiting in its group, for `sluice status` only,
    /// once the queue took it: entered before the send, a request killed in
    /// between would leave an event `sluice status` counts as waiting for
    /// 14 days. A pipeline faster than this call marks the event done
    /// first, and the ledger then does not count it (it remembers events
    /// done within the deduplication window). A failure is logged.
    pub(crate) async fn enter_group(&self, group: &GroupKey, about: &sluice_domain::GroupAbout, id: &str) {
        let about = serde_json::to_string(about).unwrap_or_default();
        if let Err(e) = self.groups.enter(group.as_str(), &about, id).await {
            tracing::warn!(event_id = id, error = %e, "group ledger not updated");
        }
    }

    /// Best effort: the decision is made; a lost trace entry is counted.
    async fn trace(&self, id: &str, stage: &str, detail: &serde_json::Value) {
        if let Err(e) = self.traces.record(id, stage, detail).await {
            self.counters.trace_failed();
            tracing::warn!(event_id = id, stage, error = %e, "could not write a trace entry");
        }
    }
}

/// Gives up what this request holds after a failure it reports, so the
/// sender's retry (and the next webhook for the resource) need not wait
/// for the leases to end. Not needed for safety: a request that dies
/// instead lets them end.
struct Undo<'a, C> {
    acceptor: &'a Acceptor<C>,
    work: &'a ShopWork,
    attempt: &'a Attempt,
    /// Whether this request holds the coalescing mark's lease.
    leased: bool,
}

impl<C: ConnectionLike + Clone + Send + Sync> Undo<'_, C> {
    async fn run(self, rejection: Rejection) -> Rejection {
        let a = self.acceptor;
        let id = self.work.event_id.as_str();
        if self.leased {
            let tag = Tag::for_mall(&self.work.event.mall_id);
            if let Err(e) = a.gates.release(&tag, &self.work.resource_gate(), id).await {
                tracing::warn!(event_id = id, error = %e, "could not release the coalescing lease; it ends on its own");
            }
        }
        if let Some(flow) = &a.flow
            && let Err(e) = flow.backlogs.left(&Tag::for_mall(&self.work.event.mall_id), id).await
        {
            tracing::warn!(event_id = id, error = %e, "flow-control count not taken back; it lapses");
        }
        if let Err(e) = a.deliveries.release(id, self.attempt).await {
            tracing::warn!(event_id = id, error = %e, "could not release the delivery lease; it ends on its own");
        }
        a.trace(id, stages::REJECTED, &json!({"code": rejection.code.as_str(), "reason": rejection.message})).await;
        rejection
    }
}

fn receipt(work: &ShopWork, status: Status, into: Option<String>) -> Receipt {
    Receipt { event_ids: vec![work.event_id.clone()], status, into }
}

/// Another attempt at this delivery holds its lease: it may yet succeed,
/// so answering `duplicate` could lose the event if it fails.
fn in_progress(ends_in: Duration) -> Rejection {
    Rejection::new(
        ErrorCode::DeliveryInProgress,
        format!(
            "this delivery is being accepted by an earlier request whose outcome is not known yet; \
             send it again (its hold ends within {} ms)",
            ends_in.as_millis()
        ),
    )
}

/// Back-pressure: the Redis work before the send outlasted `deadline`.
pub(crate) fn past_deadline(deadline: Duration, what: &str) -> Rejection {
    Rejection::new(
        ErrorCode::DeadlineExceeded,
        format!(
            "accepting this {what} took longer than its {} ms deadline (Redis is slow); nothing was kept, send it \
             again",
            deadline.as_millis()
        ),
    )
}

fn store_unavailable(doing: &str, error: &sluice_redis::Error) -> Rejection {
    tracing::warn!(error = %error, "redis failed while {doing}");
    Rejection::new(ErrorCode::StoreUnavailable, format!("redis failed while {doing}; {}", what_was_kept(error)))
}

/// What a failed Redis command leaves, for the sender. A command that
/// timed out may still have run (a slow Redis gets to it after the client
/// gave up): the load test found rows so answered in their sheets. The
/// retry is recognised either way (the delivery's lease, the row's marker).
pub(crate) fn what_was_kept(error: &sluice_redis::Error) -> &'static str {
    match error {
        sluice_redis::Error::Redis(e) if e.is_timeout() => {
            "Redis answered too late, so it may have been kept; send it again, it is kept once"
        }
        _ => "nothing was kept",
    }
}
