//! Which of [`serve`](crate::serve)'s connections are idle (no request in
//! the routes), oldest idle first, so that when every connection slot is
//! taken the oldest idle one can be closed to make room.
//!
//! Without this, whoever opens `max_connections` connections and sends
//! nothing holds every slot until the head read timeout closes them, and
//! every sender waits that long. A connection serving a request is never
//! chosen; one chosen is shut down gracefully (hyper closes it at once when
//! nothing of a request was read, or after the request it is reading), so
//! no answer is cut off.
//!
//! Each connection's stop is a child of the server's token: the server
//! stopping stops every connection, and choosing one cancels only its own.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// The idle connections of one server, by when they became idle.
#[derive(Debug, Default)]
pub(crate) struct IdleConnections {
    inner: Mutex<Inner>,
    /// Told whenever a connection becomes idle.
    idle_again: Notify,
}

#[derive(Debug, Default)]
struct Inner {
    /// The next position in the idle order.
    next: u64,
    idle: BTreeMap<u64, CancellationToken>,
}

impl IdleConnections {
    /// A new connection, idle until its first request; `stop` is its own
    /// token (a child of the server's).
    pub(crate) fn register(self: &Arc<Self>, stop: CancellationToken) -> Arc<ConnectionState> {
        let state = Arc::new(ConnectionState { registry: self.clone(), stop, at: Mutex::new(None) });
        state.idle();
        state
    }

    /// Asks the connection idle the longest to close; false when every
    /// connection is serving a request.
    pub(crate) fn evict_oldest(&self) -> bool {
        let oldest = self.lock().idle.pop_first();
        match oldest {
            Some((_, stop)) => {
                // Cancelled stays cancelled: the connection sees it even if
                // it is not waiting at this very moment.
                stop.cancel();
                true
            }
            None => false,
        }
    }

    /// Resolves when a connection becomes idle after this call.
    pub(crate) fn became_idle(&self) -> tokio::sync::futures::Notified<'_> {
        // Registered at creation: a `notify_waiters` after this call and
        // before the first poll still reaches it.
        self.idle_again.notified()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One connection's place in the idle order.
#[derive(Debug)]
pub(crate) struct ConnectionState {
    registry: Arc<IdleConnections>,
    stop: CancellationToken,
    /// Its position while idle.
    at: Mutex<Option<u64>>,
}

impl ConnectionState {
    /// A request reached the routes: not to be chosen until it is answered.
    pub(crate) fn busy(&self) {
        let at = self.at.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(at) = at {
            self.registry.lock().idle.remove(&at);
        }
    }

    /// Answered: idle again, the newest idle connection.
    pub(crate) fn idle(&self) {
        let mut at = self.at.lock().unwrap_or_else(PoisonError::into_inner);
        let mut registry = self.registry.lock();
        if let Some(old) = at.take() {
            registry.idle.remove(&old);
        }
        let position = registry.next;
        registry.next += 1;
        registry.idle.insert(position, self.stop.clone());
        *at = Some(position);
        drop(registry);
        self.registry.idle_again.notify_waiters();
    }

    /// Resolves once the server stops, or the connection was chosen to
    /// make room.
    pub(crate) async fn stopped(&self) {
        self.stop.cancelled().await;
    }
}

impl Drop for ConnectionState {
    fn drop(&mut self) {
        self.busy();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_connection_idle_longest_is_chosen_and_busy_ones_never() {
        let registry = Arc::new(IdleConnections::default());
        let server = CancellationToken::new();
        let register = || registry.register(server.child_token());
        let (first, second, third) = (register(), register(), register());
        first.busy();
        second.busy();
        second.idle();
        // Idle order now: third, then second; first is busy.
        assert!(registry.evict_oldest());
        third.stopped().await;
        assert!(!first.stop.is_cancelled() && !second.stop.is_cancelled(), "only the chosen one stops");
        assert!(registry.evict_oldest());
        second.stopped().await;
        assert!(!registry.evict_oldest(), "the busy connection was chosen");
        server.cancel();
        first.stopped().await;
        drop(first);
        assert!(registry.lock().idle.is_empty());
    }
}
