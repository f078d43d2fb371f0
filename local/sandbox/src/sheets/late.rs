//! `SheetsFault::AppliedLate`: a write that is not applied when it
//! arrives but later, after its client may have given up on it. This is
//! the case exactly-once appends must survive: the client saw a timeout,
//! the rows were not in the sheet when it looked, and then they appear,
//! below whatever was appended meanwhile.
//!
//! The operation cannot wait on its request's task: hyper drops a
//! request's future when its client goes away, and the rows must land
//! whether anyone still waits for the answer or not (that is the point).
//! So a late call waits here, in the shared state, as an owned operation,
//! and is applied under the state's lock like any call, by whichever comes
//! first: a timer task (`apply_after`) or the test
//! ([`crate::SheetsSandbox::release_late`]). The request's task only waits
//! for the answer (and for its hold to pass), then sends it if the client
//! is still there. (The plan's configured latency is not added: the hold
//! stands in for it.)
//!
//! Tests wait for "the late call arrived" and "it has been applied" on
//! [`LateCalls`], counters that only grow, published on a `watch` channel
//! ([`crate::SheetsSandbox::wait_late`]): no sleeping to guess when.

use crate::server::Answer;
use crate::sheets::answer::BROKEN;
use crate::sheets::api::{Done, Operation, no_spreadsheet};
use crate::sheets::state::{Inner, Shared};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Serialize;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{oneshot, watch};

/// The late calls (`SheetsFault::AppliedLate`) of a sandbox's life so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LateCalls {
    /// Held on arrival, not applied then.
    pub arrived: u64,
    /// Applied since (their rows are in the sheet, or they were refused
    /// then, e.g. their range's sheet was deleted meanwhile).
    pub applied: u64,
}

impl LateCalls {
    /// Arrived and not applied yet.
    pub fn pending(&self) -> u64 {
        self.arrived - self.applied
    }
}

/// A late call waiting to be applied.
struct Waiting {
    seq: u64,
    spreadsheet_id: String,
    operation: Operation,
    answer: oneshot::Sender<Answer>,
}

impl std::fmt::Debug for Waiting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Waiting").field("seq", &self.seq).field("spreadsheet_id", &self.spreadsheet_id).finish()
    }
}

/// The late calls waiting, oldest first, and their counts.
#[derive(Debug)]
pub(crate) struct LateBook {
    waiting: Vec<Waiting>,
    counts: watch::Sender<LateCalls>,
}

impl Default for LateBook {
    fn default() -> Self {
        Self { waiting: Vec::new(), counts: watch::Sender::new(LateCalls::default()) }
    }
}

impl LateBook {
    /// Holds the call recorded as `seq`, and starts its timer if it has
    /// one.
    pub(crate) fn hold(
        &mut self,
        shared: &Arc<Shared>,
        seq: u64,
        spreadsheet_id: String,
        operation: Operation,
        hold: Duration,
        apply_after: Option<Duration>,
    ) -> Held {
        let (answer, answered) = oneshot::channel();
        self.waiting.push(Waiting { seq, spreadsheet_id, operation, answer });
        self.counts.send_modify(|c| c.arrived += 1);
        if let Some(after) = apply_after {
            let shared = shared.clone();
            // Released by the test first: then there is nothing to apply.
            tokio::spawn(async move {
                tokio::time::sleep(after).await;
                shared.lock().apply_late(Some(seq));
            });
        }
        Held { hold, answered }
    }

    pub(crate) fn counts(&self) -> LateCalls {
        *self.counts.borrow()
    }

    pub(crate) fn subscribe(&self) -> watch::Receiver<LateCalls> {
        self.counts.subscribe()
    }
}

impl Inner {
    /// Applies the waiting call recorded as `seq` (`None`: every one, in
    /// the order they arrived); returns how many were applied.
    pub(crate) fn apply_late(&mut self, seq: Option<u64>) -> usize {
        let (due, waiting) = std::mem::take(&mut self.late.waiting)
            .into_iter()
            .partition::<Vec<_>, _>(|w| seq.is_none_or(|seq| w.seq == seq));
        self.late.waiting = waiting;
        let applied = due.len();
        for call in due {
            let done = match self.spreadsheets.get_mut(&call.spreadsheet_id) {
                Some(spreadsheet) => (call.operation)(spreadsheet),
                None => Done::refused(no_spreadsheet()),
            };
            self.log.amend(call.seq, |record| {
                (record.status, record.rows, record.applied) = (done.answer.status.as_u16(), done.rows, done.applied);
            });
            self.late.counts.send_modify(|c| c.applied += 1);
            // The request may be gone (its client gave up): the rows landed
            // all the same.
            let _ = call.answer.send(done.answer);
        }
        applied
    }
}

/// A late call's answer to come.
#[derive(Debug)]
pub(crate) struct Held {
    hold: Duration,
    answered: oneshot::Receiver<Answer>,
}

impl Held {
    /// Sends the answer once the hold has passed and the call has been
    /// applied: Google answers a write only once it is done.
    pub(crate) async fn deliver(self) -> Response {
        let (answer, ()) = tokio::join!(self.answered, tokio::time::sleep(self.hold));
        // The sender goes only with the sandbox's state, which this
        // request's handler keeps alive; should it go, answer as a server
        // that cannot.
        let answer = answer.unwrap_or_else(|_| {
            Answer::google(StatusCode::SERVICE_UNAVAILABLE, "The service is currently unavailable.")
        });
        answer.deliver(BROKEN).await
    }
}
