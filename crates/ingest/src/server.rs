//! [`serve`]: the HTTP/1.1 server `sluice dev` runs the routes on, with the
//! limits an open port needs. (In AWS, API Gateway is the server: the
//! Lambda gets the same routes, and the gateway's own limits.)
//!
//! Every refusal carries the JSON error body of [`Rejection`], except the
//! last resorts below, where hyper answers before a request exists:
//!
//! | what                                   | answer                                                  |
//! |----------------------------------------|---------------------------------------------------------|
//! | head over `max_head_bytes` (32 KiB)    | JSON 431 `header_too_large`, connection closed          |
//! | head over [`HEAD_READ_BUFFER_BYTES`] (1 MiB + 64 KiB), or more than 100 header lines | hyper's bare 431, connection closed |
//! | a header line or `Content-Length` hyper cannot parse | hyper's bare 400, connection closed       |
//! | request target over 65,534 bytes       | hyper's bare 414, connection closed                     |
//! | head not complete within `header_read_timeout` (10 s) | JSON 408 `request_timeout` if any of it arrived, else just closed (an idle keep-alive connection too) |
//! | a connection over `max_connections` (1,024) | the connection idle the longest (no request in progress) is closed to make room; when every one is serving a request, the new one waits until one closes |
//!
//! hyper reads a head into a buffer of [`HEAD_READ_BUFFER_BYTES`], much
//! larger than `max_head_bytes`, so that an oversized head is usually parsed
//! and refused by the routes with a JSON body; the buffer bounds what it
//! costs. Memory held by heads is at most `max_connections` ×
//! [`HEAD_READ_BUFFER_BYTES`], about 1.1 GiB at the defaults, and only while
//! that many senders each push a head of over a megabyte.

use crate::idle::{ConnectionState, IdleConnections};
use crate::ingest::Ingest;
use crate::rejection::{ErrorCode, Rejection};
use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use redis::aio::ConnectionLike;
use std::convert::Infallible;
use std::future::{Future, poll_fn};
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

/// hyper's read buffer, and so the largest head it parses; beyond it hyper
/// answers a bare 431. Room for a 1 MiB header line and then some.
pub const HEAD_READ_BUFFER_BYTES: usize = 1024 * 1024 + 64 * 1024;
/// The largest `max_connections` the config accepts: far more than one
/// process's file descriptors allow.
pub const MAX_CONNECTIONS_LIMIT: usize = 1 << 20;

/// The connection-level settings [`serve`] reads from the ingest's config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ServeLimits {
    pub(crate) header_read_timeout: Duration,
    pub(crate) max_connections: usize,
}

/// Serves `ingest` on `listener` until `shutdown` resolves, then finishes
/// the requests in progress and drains the batcher.
///
/// At most `max_connections` connections are served at once. One more is
/// accepted and, when no slot is free, the connection idle the longest is
/// closed to make room (see `idle.rs`): idle connections cannot
/// keep senders out. When every connection is serving a request, the new
/// one waits (and the listen backlog behind it) until one closes. On
/// shutdown the listener closes, idle connections close at once, and a
/// connection in the middle of a request closes once it is answered (or
/// its head times out).
pub async fn serve<C>(
    listener: TcpListener,
    ingest: Ingest<C>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    let limits = ingest.serve_limits();
    let router = ingest.router();
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let idle = Arc::new(IdleConnections::default());
    // The caller's future, as the token everything below listens to; each
    // connection holds a child of it (see `idle.rs`).
    let stop = CancellationToken::new();
    // Cancelled however serve ends (dropped too): no task outlives it.
    let _stopped_on_return = stop.clone().drop_guard();
    tokio::spawn(cancel_when(shutdown, stop.clone()));
    let connections = TaskTracker::new();
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    accept_failed(e, &stop).await;
                    continue;
                }
            },
            () = stop.cancelled() => break,
        };
        let Some(slot) = make_room(&slots, &idle, &stop).await else { break };
        let state = idle.register(stop.child_token());
        connections.spawn(connection(stream, router.clone(), limits, slot, state));
    }
    drop(listener);
    connections.close();
    connections.wait().await;
    ingest.shutdown().await;
    Ok(())
}

/// Cancels `stop` when `shutdown` resolves; ends with `stop` either way.
async fn cancel_when(shutdown: impl Future<Output = ()>, stop: CancellationToken) {
    tokio::select! {
        () = shutdown => stop.cancel(),
        () = stop.cancelled() => {}
    }
}

/// A slot for a connection just accepted: a free one, or the one the
/// connection idle the longest gives up when asked to close; when every
/// connection is busy, the first to become idle is asked. `None` on
/// shutdown.
async fn make_room(
    slots: &Arc<Semaphore>,
    idle: &IdleConnections,
    stop: &CancellationToken,
) -> Option<OwnedSemaphorePermit> {
    let mut asked = false;
    loop {
        if let Ok(slot) = slots.clone().try_acquire_owned() {
            return Some(slot);
        }
        // Made before asking, so that a connection becoming idle in
        // between is not missed.
        let became_idle = idle.became_idle();
        if !asked {
            asked = idle.evict_oldest();
        }
        tokio::select! {
            slot = slots.clone().acquire_owned() => return Some(slot.unwrap_or_else(|_| unreachable!("never closed"))),
            () = became_idle, if !asked => {}
            () = stop.cancelled() => return None,
        }
    }
}

/// Like hyper's own server did: a connection that failed before it was
/// accepted is the peer's business; anything else (out of file descriptors)
/// is logged and retried after a pause, rather than spinning. A stop ends
/// the pause.
async fn accept_failed(e: io::Error, stop: &CancellationToken) {
    use io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if !matches!(e.kind(), ConnectionRefused | ConnectionAborted | ConnectionReset) {
        tracing::error!(error = %e, "accepting a connection failed");
        tokio::select! {
            () = stop.cancelled() => {}
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
}

type Answer = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

async fn connection(
    stream: TcpStream,
    router: Router,
    limits: ServeLimits,
    _slot: OwnedSemaphorePermit,
    state: Arc<ConnectionState>,
) {
    let tracked = state.clone();
    let service = service_fn(move |request: Request<Incoming>| -> Answer {
        tracked.busy();
        let (router, tracked) = (router.clone(), tracked.clone());
        Box::pin(async move {
            let answer = router.oneshot(request.map(Body::new)).await;
            tracked.idle();
            answer
        })
    });
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_buf_size(HEAD_READ_BUFFER_BYTES);
    let mut conn = builder.serve_connection(TokioIo::new(stream), service);
    // Polled without shutting the socket down, so that a head that timed
    // out can still be answered on it.
    let done = tokio::select! {
        done = poll_fn(|cx| conn.poll_without_shutdown(cx)) => done,
        // Shutdown, or closed to make room: never in mid-answer.
        () = state.stopped() => {
            Pin::new(&mut conn).graceful_shutdown();
            poll_fn(|cx| conn.poll_without_shutdown(cx)).await
        }
    };
    let timed_out = matches!(&done, Err(e) if e.is_timeout());
    if let Err(e) = &done {
        tracing::debug!(error = %e, "connection ended");
    }
    let parts = conn.into_parts();
    let mut stream = parts.io.into_inner();
    // Bytes of a head that never completed: the sender started a request,
    // so it is told why it gets no answer. A connection that sent nothing
    // (idle, or kept alive between requests) is just closed: an unasked-for
    // 408 there could be read as the answer to a request crossing it.
    if timed_out && !parts.read_buf.is_empty() {
        let seconds = limits.header_read_timeout.as_secs_f64();
        let rejection =
            Rejection::new(ErrorCode::RequestTimeout, format!("the request head was not complete within {seconds} s"));
        let _ = stream.write_all(&raw_response(&rejection)).await;
    }
    let _ = stream.shutdown().await;
}

/// A whole HTTP/1.1 response carrying `rejection`, closing the connection.
fn raw_response(rejection: &Rejection) -> Vec<u8> {
    let status = rejection.code.status();
    let body = rejection.body();
    let mut response = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        status.as_str(),
        status.canonical_reason().unwrap_or(""),
        body.len()
    )
    .into_bytes();
    response.extend_from_slice(&body);
    response
}

/// The routes' first layer: a head larger than `max_head_bytes` is refused
/// with a JSON 431 before any route reads it.
pub(crate) async fn limit_head(State(max_head_bytes): State<usize>, request: Request, next: Next) -> Response {
    let size = head_size(&request);
    if size <= max_head_bytes {
        return next.run(request).await;
    }
    let message = format!("the request head is {size} bytes, more than the {max_head_bytes} allowed");
    let mut response = Rejection::new(ErrorCode::HeaderTooLarge, message).into_response();
    // The body was not read: the connection cannot carry another request.
    response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// The head as sent, near enough: `METHOD target HTTP/1.1\r\n`, one
/// `name: value\r\n` per header, and the blank line.
fn head_size(request: &Request) -> usize {
    let uri = request.uri();
    let target = match uri.path_and_query() {
        Some(origin_form) if uri.authority().is_none() => origin_form.as_str().len(),
        _ => uri.to_string().len(),
    };
    let line = request.method().as_str().len() + " ".len() + target + " HTTP/1.1\r\n".len();
    let headers: usize = request.headers().iter().map(|(name, value)| name.as_str().len() + value.len() + 4).sum();
    line + headers + 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_is_measured_as_it_was_sent() {
        let request = Request::builder()
            .method("POST")
            .uri("/webhooks/cafe24")
            .header("x-api-key", "k")
            .body(Body::empty())
            .unwrap();
        let sent = "POST /webhooks/cafe24 HTTP/1.1\r\nx-api-key: k\r\n\r\n";
        assert_eq!(head_size(&request), sent.len());
    }

    #[test]
    fn a_raw_rejection_is_a_complete_closing_response() {
        let text = String::from_utf8(raw_response(&Rejection::new(ErrorCode::RequestTimeout, "slow"))).unwrap();
        let body = r#"{"error":{"code":"request_timeout","message":"slow"}}"#;
        assert!(text.starts_with("HTTP/1.1 408 Request Timeout\r\n"), "{text}");
        assert!(text.contains(&format!("content-length: {}\r\nconnection: close\r\n\r\n", body.len())), "{text}");
        assert!(text.ends_with(body), "{text}");
    }
}
