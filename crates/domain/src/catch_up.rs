//! "Catch up mall M": the request that carries a mall's flow-control backlog
//! (its dirty set, see `sluice-redis`'s `backlog`) through the pipeline,
//! one run per request, each run queueing the next while resources are
//! left.
//!
//! It travels on a delay queue, not the FIFO queue: SQS FIFO refuses a
//! per-message `DelaySeconds`, and the next run must wait for the mall's
//! bucket without a Step Functions Wait state (Express bills its
//! duration) or a Lambda sleeping. A standard queue gives no order and
//! may deliver twice, which the runs tolerate: the dirty set is the
//! state, a request only says "look at mall M".

use crate::error_kind::StepError;
use crate::queue::DelayQueue;
use crate::queue::delay::send_after;
use serde::{Deserialize, Serialize};
use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// One catch-up request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatchUpRequest {
    /// Tells the request apart from the chain's other requests, so a
    /// message meant for another consumer is refused: always `"mall_drain"`,
    /// its name before the catch-up was called so (requests queued by an
    /// earlier release still read).
    pub kind: CatchUpKind,
    pub mall_id: String,
    /// The chain this request carries: the event id that started it.
    pub token: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CatchUpKind {
    #[serde(rename = "mall_drain")]
    CatchUp,
}

impl CatchUpRequest {
    pub fn new(mall_id: impl Into<String>, token: impl Into<String>) -> Self {
        Self { kind: CatchUpKind::CatchUp, mall_id: mall_id.into(), token: token.into() }
    }

    pub fn to_body(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| unreachable!("a catch-up request always serialises: {e}"))
    }

    pub fn from_body(body: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(body)
    }
}

/// A boxed future, so the port can be shared as a trait object.
pub type Pending<'a> = Pin<Box<dyn Future<Output = Result<(), StepError>> + Send + 'a>>;

/// Queues catch-up requests (ingest starts a chain, a run queues the next).
pub trait CatchUpRequests: Send + Sync + Debug {
    /// Queues `request` to arrive after `delay` (rounded up to whole
    /// seconds, at most SQS's 15 minutes: a run still too early
    /// queues another).
    fn request(&self, request: &CatchUpRequest, delay: Duration) -> Pending<'_>;
}

/// [`CatchUpRequests`] over a delay queue.
#[derive(Debug)]
pub struct QueueCatchUpRequests<Q> {
    queue: Q,
}

impl<Q> QueueCatchUpRequests<Q> {
    pub fn new(queue: Q) -> Self {
        Self { queue }
    }
}

impl<Q: DelayQueue + Debug + 'static> CatchUpRequests for QueueCatchUpRequests<Q> {
    fn request(&self, request: &CatchUpRequest, delay: Duration) -> Pending<'_> {
        let body = request.to_body();
        Box::pin(async move { send_after(&self.queue, body, delay, "the catch-up request").await })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_reads_back_and_refuses_other_bodies() {
        let request = CatchUpRequest::new("acme", "ev-1");
        assert_eq!(CatchUpRequest::from_body(&request.to_body()).unwrap(), request);
        // The body an earlier release queued (and still writes: the queue may hold it across a deploy).
        let earlier = r#"{"kind":"mall_drain","mall_id":"acme","token":"ev-1"}"#;
        assert_eq!(CatchUpRequest::from_body(earlier).unwrap(), request);
        assert_eq!(request.to_body(), earlier);
        assert!(CatchUpRequest::from_body(r#"{"sheet":"s","kind":"flush"}"#).is_err());
        assert!(CatchUpRequest::from_body(r#"{"kind":"mall_drain","mall_id":"acme"}"#).is_err());
    }
}
