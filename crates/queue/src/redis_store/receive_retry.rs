//! A receive whose answer is lost is asked again, the same attempt.
//!
//! A receive hides what it takes for the visibility timeout (120 s for the
//! sheet flush queue, 330 s for the events queue). When its answer does not
//! arrive in time (Redis stalled past the connection's answer timeout, or
//! the connection dropped), the script may still have run, and its
//! messages would stay hidden, unseen by anyone, until that timeout: a
//! whole FIFO group stalled for minutes. So every receive carries an
//! attempt id (as SQS FIFO's `ReceiveRequestAttemptId`), and the same
//! script is sent again with it: `receive.lua` answers what that attempt
//! took, or takes now if the first call never ran.

use crate::error::QueueError;
use redis::aio::ConnectionLike;
use redis::{ScriptInvocation, Value};
use std::time::{Duration, Instant};

/// How long a receive keeps asking again while answers are lost: longer
/// than the stalls the connection rides out, far below any visibility
/// timeout.
pub(super) const RECEIVE_PATIENCE: Duration = Duration::from_secs(10);

/// The pause before asking again: an error that comes back at once (a
/// dropped connection) must not turn the retry into a busy loop.
const PAUSE: Duration = Duration::from_millis(20);

/// `invocation` (a receive carrying its attempt id) run until it answers,
/// again after each lost answer for up to [`RECEIVE_PATIENCE`].
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
