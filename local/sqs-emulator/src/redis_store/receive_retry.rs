//! A receive whose answer is lost is asked again, the same attempt.
//!
//! A receive hides what it takes for the visibility timeout (120 s for the
//! sheet flush queue, 330 s for the events queue). When its answer does not
//! arrive in time (Redis stalled past the connection's answer timeout, or
//! the connection dropped), the script may still have run, and its
//! messages would stay hidden, unseen by anyone, until that timeout: a
//! whole FIFO group stalled for minutes. So every receive carries an
//! attempt id (the caller's SQS FIFO `ReceiveRequestAttemptId` when it
//! gave one, else a fresh one), and the same script is sent again with
//! it: `receive.lua` answers what that attempt took, or takes now if the
//! first call never ran.

use crate::error::QueueError;
use crate::receive_attempt::ReceiveAttemptId;
use redis::aio::ConnectionLike;
use redis::{ScriptInvocation, Value};
use sluice_domain::queue::rules::DEDUP_WINDOW;
use std::time::{Duration, Instant};

/// How long a receive keeps asking again while answers are lost: longer
/// than the stalls the connection rides out, far below any visibility
/// timeout.
pub(super) const RECEIVE_PATIENCE: Duration = Duration::from_secs(10);

/// The pause before asking again: an error that comes back at once (a
/// dropped connection) must not turn the retry into a busy loop.
const PAUSE: Duration = Duration::from_millis(20);

/// `invocation` (a receive carrying its attempt id) run until it answers,
/// again after each lost answer for up to [`RECEIVE_PATIENCE`]. No stop
/// signal cuts this short: giving up early is what hides messages.
pub(super) async fn invoke_until_answered<C: ConnectionLike + Clone>(
    invocation: &ScriptInvocation<'_>,
    conn: &C,
) -> Result<Value, QueueError> {
    let give_up = Instant::now() + RECEIVE_PATIENCE;
    loop {
        match invocation.invoke_async(&mut conn.clone()).await {
            Err(e) if (e.is_timeout() || e.is_connection_dropped()) && Instant::now() < give_up => {
                tracing::debug!(error = %e, "queue: a receive's answer was lost; asking again with the same attempt id");
                tokio::time::sleep(PAUSE).await;
            }
            answer => return Ok(answer?),
        }
    }
}

/// A receive's attempt, as `receive.lua` takes it (ARGV[5..7]).
#[derive(Debug)]
pub(super) struct Attempt {
    /// 'c:' and the caller's id, or 'u:' and a fresh uuid: the prefixes
    /// keep a caller's id from ever naming one of ours. Scoped to the
    /// queue by the queue's `rx` key.
    key: String,
    caller: Option<ReceiveAttemptId>,
    keep: Duration,
}

impl Attempt {
    /// The caller's attempt is kept for SQS's five minutes and refused
    /// once spent; one of ours only needs to outlive [`RECEIVE_PATIENCE`],
    /// and is kept while its messages can be in flight (once spent, they
    /// went back to the queue, and asked again it receives afresh).
    pub(super) fn new(caller: Option<&ReceiveAttemptId>, visibility: Duration) -> Self {
        match caller {
            Some(id) => Self { key: format!("c:{id}"), caller: Some(id.clone()), keep: DEDUP_WINDOW },
            None => Self {
                key: format!("u:{}", uuid::Uuid::new_v4().simple()),
                caller: None,
                keep: visibility.min(DEDUP_WINDOW),
            },
        }
    }

    pub(super) fn add_args(&self, invocation: &mut ScriptInvocation<'_>) {
        let keep_ms = u64::try_from(self.keep.as_millis()).unwrap_or(u64::MAX).max(1);
        invocation.arg(&self.key).arg(keep_ms).arg(if self.caller.is_some() { "refuse" } else { "" });
    }

    /// The error for the script's 'spent' (only ever the caller's).
    pub(super) fn not_retryable(&self) -> QueueError {
        QueueError::AttemptNotRetryable(
            self.caller.as_ref().map_or(self.key.as_str(), ReceiveAttemptId::as_str).to_owned(),
        )
    }
}
