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
//!
//! An [`Answer`] to an upstream API call leaves as its [`Delivery`] says:
//! now, after latency, after a hold, broken off mid-body, or not at all.

use axum::body::{Body, Bytes};
use axum::extract::connect_info::Connected;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::serve::{IncomingStream, Listener};
use axum::{Json, Router};
use serde_json::Value;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How long a stop waits for requests in flight before cutting them off.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// A running HTTP server; dropping it aborts the server task.
#[derive(Debug)]
pub(crate) struct Server {
    addr: SocketAddr,
    stop: CancellationToken,
    task: JoinHandle<std::io::Result<()>>,
}

impl Server {
    /// Binds `addr` (port 0: a free port) and serves `router` on it.
    pub(crate) async fn bind(addr: SocketAddr, router: Router) -> Result<Self, String> {
        let listener = TcpListener::bind(addr).await.map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let stop = CancellationToken::new();
        let router = router.layer(axum::middleware::from_fn(hang_up_when_asked));
        let service = router.into_make_service_with_connect_info::<Hangup>();
        let serve =
            axum::serve(HangupListener(listener), service).with_graceful_shutdown(stop.clone().cancelled_owned());
        let task = tokio::spawn(serve.into_future());
        Ok(Self { addr, stop, task })
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting, lets answers in flight finish for up to
    /// [`STOP_GRACE`], then aborts what is left.
    pub(crate) async fn stop(mut self) {
        self.stop.cancel();
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

/// How an answer leaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// After this much latency (zero: at once).
    After(Duration),
    /// After holding it this long, past the client's timeout.
    Hold(Duration),
    /// Status and headers after this latency, then the body breaks off.
    Drop(Duration),
    /// No answer: the connection is closed after this latency.
    Close(Duration),
}

/// What a body broken off mid-answer starts with, and its content type.
pub(crate) type Broken = (&'static [u8], &'static str);

/// An upstream API's answer: status, JSON body, extra headers, delivery.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    body: Value,
    pub(crate) headers: Vec<(&'static str, String)>,
    delivery: Delivery,
}

impl Answer {
    pub(crate) fn json(status: StatusCode, body: Value) -> Self {
        Self { status, body, headers: Vec::new(), delivery: Delivery::After(Duration::ZERO) }
    }

    pub(crate) fn after(mut self, delivery: Delivery) -> Self {
        self.delivery = delivery;
        self
    }

    /// Sends the answer as its delivery says. The wait happens here, after
    /// the state's lock was released, on this request's own task: a held
    /// answer holds up nothing else.
    pub(crate) async fn deliver(self, (broken_start, content_type): Broken) -> Response {
        let (Delivery::After(wait) | Delivery::Hold(wait) | Delivery::Drop(wait) | Delivery::Close(wait)) =
            self.delivery;
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        let mut response = match self.delivery {
            Delivery::Close(_) => {
                let mut response = StatusCode::INTERNAL_SERVER_ERROR.into_response();
                response.extensions_mut().insert(HangUpNow);
                return response;
            }
            // Status and headers go out, then the body breaks off: the
            // client sees the connection die mid-response.
            Delivery::Drop(_) => {
                let chunks: [Result<Bytes, io::Error>; 2] =
                    [Ok(Bytes::from_static(broken_start)), Err(io::Error::other("sandbox dropped the connection"))];
                let mut r = Response::new(Body::from_stream(futures::stream::iter(chunks)));
                *r.status_mut() = self.status;
                r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
                r
            }
            Delivery::After(_) | Delivery::Hold(_) => (self.status, Json(self.body)).into_response(),
        };
        for (name, value) in self.headers {
            if let Ok(value) = HeaderValue::from_str(&value) {
                response.headers_mut().insert(name, value);
            }
        }
        response
    }
}

/// The credentials of `Authorization: <scheme> …` (the scheme in any
/// case), if that is what was sent.
pub(crate) fn credentials<'a>(headers: &'a header::HeaderMap, scheme: &str) -> Option<&'a str> {
    let (sent, credentials) = headers.get(header::AUTHORIZATION)?.to_str().ok()?.split_once(' ')?;
    sent.eq_ignore_ascii_case(scheme).then(|| credentials.trim())
}

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
    /// `write` on the stream, or a reset connection once its hangup fired.
    fn unless_hung_up<T>(
        &mut self,
        write: impl FnOnce(Pin<&mut TcpStream>) -> Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        if self.hangup.fired() {
            return Poll::Ready(Err(io::Error::new(io::ErrorKind::ConnectionReset, "sandbox hung up")));
        }
        write(Pin::new(&mut self.inner))
    }
}

impl AsyncRead for HangupStream {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for HangupStream {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.unless_hung_up(|inner| inner.poll_write(cx, buf))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.unless_hung_up(|inner| inner.poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.unless_hung_up(|inner| inner.poll_flush(cx))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
