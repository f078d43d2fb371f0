//! Time for Wait states, retry intervals, task timeouts and timestamps,
//! behind one trait so tests never sleep for real.
//!
//! [`SystemClock`] is what `sluice dev` uses. [`VirtualClock`] reads the
//! wall clock as a fixed start plus tokio's elapsed time: in a runtime with
//! paused time (`#[tokio::test(start_paused = true)]`) tokio jumps straight
//! to the next timer whenever every task is idle, so a 30 s retry backoff
//! takes no real time, concurrent sleeps in Map and Parallel branches
//! still overlap as they would, and timestamps are exact.

use futures::future::{BoxFuture, Either, select};
use std::fmt;
use std::time::{Duration, SystemTime};

/// A source of wall-clock time and of sleeps.
pub trait Clock: Send + Sync + fmt::Debug {
    /// The current wall-clock time (history timestamps, `$$` times,
    /// Timestamp waits).
    fn now(&self) -> SystemTime;
    /// Completes after `duration`.
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()>;
}

/// `future`'s output, or `None` when `timeout` passes on `clock` first.
pub(crate) async fn within<T>(
    clock: &dyn Clock,
    timeout: Option<Duration>,
    future: impl Future<Output = T> + Unpin,
) -> Option<T> {
    let Some(timeout) = timeout else { return Some(future.await) };
    match select(future, clock.sleep(timeout)).await {
        Either::Left((output, _)) => Some(output),
        Either::Right(_) => None,
    }
}

/// The machine's clock and tokio's timers.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(duration))
    }
}

/// A clock that starts at a chosen wall time and advances with tokio's
/// (possibly paused) time. Create it inside the runtime it is used in.
#[derive(Debug, Clone, Copy)]
pub struct VirtualClock {
    start: SystemTime,
    origin: tokio::time::Instant,
}

impl VirtualClock {
    pub fn starting_at(start: SystemTime) -> Self {
        Self { start, origin: tokio::time::Instant::now() }
    }

    /// Time elapsed on this clock since it was created.
    pub fn elapsed(&self) -> Duration {
        self.origin.elapsed()
    }
}

impl Clock for VirtualClock {
    fn now(&self) -> SystemTime {
        self.start + self.origin.elapsed()
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(duration))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn virtual_time_advances_without_waiting() {
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let clock = VirtualClock::starting_at(start);
        let real = std::time::Instant::now();
        clock.sleep(Duration::from_secs(3_600)).await;
        assert_eq!(clock.now(), start + Duration::from_secs(3_600));
        assert!(real.elapsed() < Duration::from_secs(5), "an hour of virtual time took {:?}", real.elapsed());
    }
}
