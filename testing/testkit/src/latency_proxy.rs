//! A slow Redis for tests: a TCP proxy on 127.0.0.1 that holds every
//! chunk a client sends for a delay before passing it on, the delay
//! changeable while connections are open ([`LatencyProxy::set_delay`]).
//!
//! Why a proxy rather than Redis's `DEBUG SLEEP`: `DEBUG SLEEP` stops the
//! whole server for a while, a stall in which no command runs and nothing
//! is pipelined, and it stalls the test's own reads of Redis too. A slow
//! network or an overloaded cache instead adds latency to every round
//! trip while commands keep flowing (a multiplexed connection still has
//! many in flight): what lets a service's queues of waiting requests grow,
//! which back-pressure must stop. The proxy adds that, to the clients
//! pointed at it only, for as long as a test wants, at any size (0 passes
//! traffic straight through).
//!
//! Only the client-to-server direction is delayed, so one round trip is
//! slower by the delay. Order is kept: each direction is one reader and
//! one writer in sequence, and a chunk leaves no earlier than its turn.
//! Each direction holds at most [`CHUNKS_HELD`] chunks; beyond that the
//! reader waits, and TCP pushes back on the client.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

/// Chunks held per direction of a connection before its reader waits.
pub const CHUNKS_HELD: usize = 1024;

/// A running proxy; dropping it closes the listener and every connection.
#[derive(Debug)]
pub struct LatencyProxy {
    address: SocketAddr,
    delay_us: Arc<AtomicU64>,
    task: JoinHandle<()>,
}

impl LatencyProxy {
    /// Listens on a free port of 127.0.0.1 and forwards each connection to
    /// `upstream`, at first with no delay. Needs a tokio runtime.
    pub async fn start(upstream: SocketAddr) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let address = listener.local_addr()?;
        let delay_us = Arc::new(AtomicU64::new(0));
        let task = tokio::spawn(accept(listener, upstream, delay_us.clone()));
        Ok(Self { address, delay_us, task })
    }

    /// Where clients connect.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// A `redis://` URL of the proxy.
    pub fn redis_url(&self) -> String {
        format!("redis://{}/", self.address)
    }

    /// From now on, each chunk sent is held this long (chunks already
    /// held keep the delay they were given).
    pub fn set_delay(&self, delay: Duration) {
        self.delay_us.store(u64::try_from(delay.as_micros()).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    pub fn delay(&self) -> Duration {
        Duration::from_micros(self.delay_us.load(Ordering::Relaxed))
    }
}

impl Drop for LatencyProxy {
    fn drop(&mut self) {
        // The accept task owns the connections' tasks: aborting it drops
        // them, which aborts them and closes their sockets.
        self.task.abort();
    }
}

async fn accept(listener: TcpListener, upstream: SocketAddr, delay_us: Arc<AtomicU64>) {
    let mut connections = JoinSet::new();
    loop {
        let Ok((client, _)) = listener.accept().await else { continue };
        let delay_us = delay_us.clone();
        connections.spawn(async move {
            // A refused upstream closes the client's connection: it sees
            // what it would see without the proxy.
            let Ok(server) = TcpStream::connect(upstream).await else { return };
            let _ = (client.set_nodelay(true), server.set_nodelay(true));
            let (client_read, client_write) = client.into_split();
            let (server_read, server_write) = server.into_split();
            let slow = relay(client_read, server_write, Some(delay_us));
            let fast = relay(server_read, client_write, None);
            // Either side closing or failing ends the connection.
            tokio::select! {
                () = slow => {}
                () = fast => {}
            }
        });
        while connections.try_join_next().is_some() {}
    }
}

/// Copies `from` to `to`, each chunk held for the delay (if any) first.
async fn relay(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, delay_us: Option<Arc<AtomicU64>>) {
    let (held, mut due) = mpsc::channel::<(Instant, Vec<u8>)>(CHUNKS_HELD);
    let reader = async move {
        let mut buffer = vec![0; 64 * 1024];
        loop {
            let n = match from.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            let delay = delay_us.as_ref().map_or(0, |d| d.load(Ordering::Relaxed));
            let at = Instant::now() + Duration::from_micros(delay);
            if held.send((at, buffer[..n].to_vec())).await.is_err() {
                return;
            }
        }
    };
    let writer = async move {
        while let Some((at, chunk)) = due.recv().await {
            tokio::time::sleep_until(at).await;
            if to.write_all(&chunk).await.is_err() {
                return;
            }
        }
        // The reader saw the end: pass it on once everything held is out.
        let _ = to.shutdown().await;
    };
    // The writer ends after the reader (it drains what was held), or
    // first when the peer is gone.
    tokio::join!(reader, writer);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One round trip of `bytes` through the proxy to the echo server.
    async fn round_trip(stream: &mut TcpStream, bytes: &[u8]) -> Vec<u8> {
        stream.write_all(bytes).await.unwrap();
        let mut back = vec![0; bytes.len()];
        stream.read_exact(&mut back).await.unwrap();
        back
    }

    #[tokio::test]
    async fn bytes_pass_in_order_and_a_round_trip_takes_at_least_the_delay() {
        let echo = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let upstream = echo.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((stream, _)) = echo.accept().await {
                tokio::spawn(async move {
                    let (mut r, mut w) = stream.into_split();
                    let _ = tokio::io::copy(&mut r, &mut w).await;
                });
            }
        });
        let proxy = LatencyProxy::start(upstream).await.unwrap();
        let mut stream = TcpStream::connect(proxy.address()).await.unwrap();
        assert_eq!(round_trip(&mut stream, b"one").await, b"one");

        proxy.set_delay(Duration::from_millis(50));
        assert_eq!(proxy.delay(), Duration::from_millis(50));
        let sent = Instant::now();
        let many: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        assert_eq!(round_trip(&mut stream, &many).await, many);
        // A lower bound only: how much longer it took is the machine's business.
        assert!(sent.elapsed() >= Duration::from_millis(50));

        proxy.set_delay(Duration::ZERO);
        assert_eq!(round_trip(&mut stream, b"two").await, b"two");
        drop(proxy);
        // Dropped: the connection is closed.
        let mut rest = Vec::new();
        let closed = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut rest)).await;
        assert!(matches!(closed, Ok(Ok(0)) | Ok(Err(_))), "{closed:?}");
    }
}
