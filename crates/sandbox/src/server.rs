//! Serving a sandbox's router on a TCP listener, and stopping it.
//!
//! A sandbox may be holding responses on purpose (timeout faults), so a
//! stop waits briefly for answers in flight and then aborts the rest.

use axum::Router;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// How long a stop waits for requests in flight before cutting them off.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// A running HTTP server; dropping it aborts the server task.
#[derive(Debug)]
pub(crate) struct Server {
    addr: SocketAddr,
    shutdown: Option<oneshot::Sender<()>>,
    task: JoinHandle<std::io::Result<()>>,
}

impl Server {
    pub(crate) fn spawn(listener: TcpListener, router: Router) -> std::io::Result<Self> {
        let addr = listener.local_addr()?;
        let (shutdown, stop) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            axum::serve(listener, router)
                .with_graceful_shutdown(async {
                    // A dropped sender stops the server too.
                    let _ = stop.await;
                })
                .await
        });
        Ok(Self { addr, shutdown: Some(shutdown), task })
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting, lets answers in flight finish for up to
    /// [`STOP_GRACE`], then aborts what is left.
    pub(crate) async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if tokio::time::timeout(STOP_GRACE, &mut self.task).await.is_err() {
            self.task.abort();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}
