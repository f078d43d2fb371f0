//! The effects of a valid webhook, in order, and their undo.
//!
//! 1. **Duplicate gate** `{prefix}{ev:<event id>}:gate:ingest`, set for the
//!    duplicate window with a value unique to this request. Closed means
//!    this delivery was seen before: if its trace shows it `enqueued` or
//!    `coalesced`, this is a redelivery of an accepted event → `duplicate`.
//!    Otherwise the first request is still deciding (or failed and could
//!    not undo): answering `duplicate` then could lose the event if that
//!    request fails, so the answer is 503 `delivery_in_progress` and the
//!    sender tries again.
//! 2. Trace `received`.
//! 3. **Coalescing** `{prefix}{mall:<mall>}:gate:<kind>:<id>`
//!    ([`Gates::join_pending`]): if a fetch of this resource is pending,
//!    this event joins it → `coalesced` (traced with `into`). If the
//!    pending owner is this very event (a redelivery after its duplicate
//!    window, before its fetch ran), it is a `duplicate`.
//! 4. **Enqueue** through the batcher; accepted → trace `enqueued` with the
//!    message id → `enqueued`. Just before the send, the event is entered
//!    in its group's ledger (`sluice status`); a failed send forgets it.
//!
//! When step 2, 3 or 4 fails, the marks set before it are cleared (each a
//! compare-and-delete of the value this request wrote), the trace says
//! `rejected` and why, and the sender gets a 5xx (or 400 if the queue
//! refused the entry itself): the sender's retry then starts afresh.
//! Trace writes after the decision (steps 3 and 4) are best effort: the
//! answer follows what the gates and the queue did, and a failed trace
//! write is counted and logged.

use crate::batcher::Batcher;
use crate::counters::Counters;
use crate::rejection::{ErrorCode, Rejection};
use redis::aio::ConnectionLike;
use serde::Serialize;
use serde_json::json;
use sluice_domain::ShopWork;
use sluice_domain::queue::SendOutcome;
use sluice_redis::{Entry, Gates, GroupLedger, Tag, Traces};
use std::time::Duration;

/// The duplicate gate's name under the event's tag.
pub const DUPLICATE_GATE: &str = "ingest";

/// Trace stages written by ingest.
pub mod stages {
    pub const RECEIVED: &str = "received";
    pub const DUPLICATE: &str = "duplicate";
    pub const COALESCED: &str = "coalesced";
    pub const ENQUEUED: &str = "enqueued";
    pub const REJECTED: &str = "rejected";
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
    pub(crate) gates: Gates<C>,
    pub(crate) traces: Traces<C>,
    pub(crate) groups: GroupLedger<C>,
    pub(crate) batcher: Batcher,
    pub(crate) counters: std::sync::Arc<Counters>,
    pub(crate) duplicate_window: Duration,
    pub(crate) pending_timeout: Duration,
}

impl<C: ConnectionLike + Clone + Send + Sync> Acceptor<C> {
    pub(crate) async fn accept(&self, work: ShopWork) -> Result<Receipt, Rejection> {
        let id = work.event_id.as_str();
        let event_tag = Tag::for_event(id);
        let nonce = hex::encode(rand_nonce());

        match self.gates.mark_pending(&event_tag, DUPLICATE_GATE, &nonce, self.duplicate_window).await {
            Ok(Entry::Passed) => {}
            Ok(Entry::Closed { .. }) => return self.seen_before(id).await,
            Err(e) => return Err(store_unavailable("checking for a duplicate delivery", &e)),
        }
        let undo = Undo { acceptor: self, work: &work, nonce: &nonce, pending: false };

        let received = json!({
            "mall_id": work.event.mall_id,
            "topic": work.event.topic,
            "resource": work.resource_gate(),
            "delivery_id": work.event.delivery_id,
        });
        if let Err(e) = self.traces.record(id, stages::RECEIVED, &received).await {
            return Err(undo.run(store_unavailable("recording the trace", &e)).await);
        }

        let mall_tag = Tag::for_mall(&work.event.mall_id);
        let gate = work.resource_gate();
        match self.gates.join_pending(&mall_tag, &gate, id, self.pending_timeout).await {
            Ok(Entry::Passed) => {}
            Ok(Entry::Closed { holder, .. }) if holder == id => {
                self.trace(id, stages::DUPLICATE, &json!({"pending_fetch": true})).await;
                return Ok(receipt(&work, Status::Duplicate, None));
            }
            Ok(Entry::Closed { holder, .. }) => {
                self.trace(id, stages::COALESCED, &json!({"into": holder})).await;
                return Ok(receipt(&work, Status::Coalesced, Some(holder)));
            }
            Err(e) => return Err(undo.run(store_unavailable("checking for a pending fetch", &e)).await),
        }
        let undo = Undo { pending: true, ..undo };

        let group = work.event.group_key();
        self.enter_group(group.as_str(), &work.event.group_about(), id).await;
        match self.batcher.send(work.to_message()).await {
            SendOutcome::Accepted(accepted) => {
                let detail = json!({
                    "message_id": accepted.message_id.as_str(),
                    "sequence_number": accepted.sequence_number,
                });
                self.trace(id, stages::ENQUEUED, &detail).await;
                Ok(receipt(&work, Status::Enqueued, None))
            }
            SendOutcome::Failed(failure) => {
                let (code, what) = if failure.sender_fault {
                    (ErrorCode::QueueRefused, "the queue refused the message")
                } else {
                    (ErrorCode::QueueUnavailable, "the queue did not take the message")
                };
                let message = format!("{what} ({}: {}); nothing was kept", failure.code, failure.message);
                self.forget_group(group.as_str(), id).await;
                Err(undo.run(Rejection::new(code, message)).await)
            }
        }
    }

    /// The duplicate gate is closed: a redelivery of an accepted event, or
    /// of one whose first request has not settled.
    async fn seen_before(&self, id: &str) -> Result<Receipt, Rejection> {
        let trace = self.traces.read(id).await.map_err(|e| store_unavailable("reading the trace", &e))?;
        let accepted = trace.iter().any(|entry| [stages::ENQUEUED, stages::COALESCED].contains(&entry.stage.as_str()));
        if !accepted {
            return Err(Rejection::new(
                ErrorCode::DeliveryInProgress,
                "this delivery is being accepted by an earlier request whose outcome is not known yet; send it again",
            ));
        }
        self.trace(id, stages::DUPLICATE, &json!({})).await;
        Ok(Receipt { event_ids: vec![id.to_owned()], status: Status::Duplicate, into: None })
    }

    /// Counts the event as waiting in its group, for `sluice status` only:
    /// a failure is logged and the event still goes to the queue.
    pub(crate) async fn enter_group(&self, group: &str, about: &sluice_domain::GroupAbout, id: &str) {
        let about = serde_json::to_string(about).unwrap_or_default();
        if let Err(e) = self.groups.enter(group, &about, id).await {
            tracing::warn!(event_id = id, error = %e, "group ledger not updated");
        }
    }

    /// The send failed: the event does not wait in its group after all.
    pub(crate) async fn forget_group(&self, group: &str, id: &str) {
        if let Err(e) = self.groups.forget(group, id).await {
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

/// Clears what this request set, so the sender's retry starts afresh.
struct Undo<'a, C> {
    acceptor: &'a Acceptor<C>,
    work: &'a ShopWork,
    nonce: &'a str,
    /// Whether this request owns the coalescing mark.
    pending: bool,
}

impl<C: ConnectionLike + Clone + Send + Sync> Undo<'_, C> {
    async fn run(self, rejection: Rejection) -> Rejection {
        let a = self.acceptor;
        let id = self.work.event_id.as_str();
        if self.pending {
            let tag = Tag::for_mall(&self.work.event.mall_id);
            if let Err(e) = a.gates.clear(&tag, &self.work.resource_gate(), id).await {
                // The mark lapses after the pending timeout; until then,
                // webhooks for this resource are coalesced into nothing.
                tracing::error!(event_id = id, error = %e, "could not clear the coalescing mark after a failed enqueue");
            }
        }
        if let Err(e) = a.gates.clear(&Tag::for_event(id), DUPLICATE_GATE, self.nonce).await {
            // Until the window ends, redeliveries are answered 503
            // delivery_in_progress (the trace shows no acceptance).
            tracing::error!(event_id = id, error = %e, "could not clear the duplicate gate after a failure");
        }
        a.trace(id, stages::REJECTED, &json!({"code": rejection.code.as_str(), "reason": rejection.message})).await;
        rejection
    }
}

fn receipt(work: &ShopWork, status: Status, into: Option<String>) -> Receipt {
    Receipt { event_ids: vec![work.event_id.clone()], status, into }
}

fn store_unavailable(doing: &str, error: &sluice_redis::Error) -> Rejection {
    tracing::warn!(error = %error, "redis failed while {doing}");
    Rejection::new(ErrorCode::StoreUnavailable, format!("redis failed while {doing}; nothing was kept"))
}

/// 128 random bits: this request's value in the duplicate gate, so that
/// its undo deletes its own mark and never a later request's.
fn rand_nonce() -> [u8; 16] {
    rand::random::<u128>().to_be_bytes()
}
