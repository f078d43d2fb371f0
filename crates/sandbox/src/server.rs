//! Serving a sandbox's router on a TCP listener, and stopping it.
//!
//! A sandbox may be holding responses on purpose (timeout faults), so a
//! stop waits briefly for answers in flight and then aborts the rest.
//!
//! A handler whose response carries [`HangUpNow`] (an extension) has its
//! connection closed without any answer, as when an upstream's process
//! dies or a proxy drops the connection: every connection carries a
//! [`Hangup`], which a layer fires on seeing the mark, and a fired
//! connection fails its next write, so hyper closes it before the status
//! line. Nothing short of failing the socket keeps hyper from sending it.

use axum::Router;
use axum::extract::connect_info::Connected;
use axum::serve::{IncomingStream, Listener};
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
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
        let router = router.layer(axum::middleware::from_fn(hang_up_when_asked));
        let service = router.into_make_service_with_connect_info::<Hangup>();
        let task = tokio::spawn(async move {
            axum::serve(HangupListener(listener), service)
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

/// The mark a handler puts in its response's extensions to have the
/// connection closed instead of answered.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HangUpNow;

/// Fires the connection's [`Hangup`] when the response carries [`HangUpNow`].
async fn hang_up_when_asked(
    axum::extract::ConnectInfo(hangup): axum::extract::ConnectInfo<Hangup>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let response = next.run(request).await;
    if response.extensions().get::<HangUpNow>().is_some() {
        hangup.fire();
    }
    response
}

/// A connection's kill switch (see the module docs).
#[derive(Debug, Clone, Default)]
pub(crate) struct Hangup(Arc<AtomicBool>);

impl Hangup {
    /// Closes the connection at its next write: the answer never leaves.
    pub(crate) fn fire(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    fn fired(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

impl Connected<IncomingStream<'_, HangupListener>> for Hangup {
    fn connect_info(stream: IncomingStream<'_, HangupListener>) -> Self {
        stream.remote_addr().1.clone()
    }
}

/// Accepts as a `TcpListener` does, each connection with its [`Hangup`].
pub(crate) struct HangupListener(TcpListener);

impl Listener for HangupListener {
    type Io = HangupStream;
    type Addr = (SocketAddr, Hangup);

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        let (inner, addr) = Listener::accept(&mut self.0).await;
        let hangup = Hangup::default();
        (HangupStream { inner, hangup: hangup.clone() }, (addr, hangup))
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        Ok((self.0.local_addr()?, Hangup::default()))
    }
}

/// A TCP stream whose writes fail once its [`Hangup`] fired.
pub(crate) struct HangupStream {
    inner: TcpStream,
    hangup: Hangup,
}

impl HangupStream {
    fn hung_up(&self) -> Option<io::Error> {
        self.hangup.fired().then(|| io::Error::new(io::ErrorKind::ConnectionReset, "sandbox hung up"))
    }
}

impl AsyncRead for HangupStream {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for HangupStream {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.hung_up() {
            Some(e) => Poll::Ready(Err(e)),
            None => Pin::new(&mut self.inner).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.hung_up() {
            Some(e) => Poll::Ready(Err(e)),
            None => Pin::new(&mut self.inner).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.hung_up() {
            Some(e) => Poll::Ready(Err(e)),
            None => Pin::new(&mut self.inner).poll_flush(cx),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
