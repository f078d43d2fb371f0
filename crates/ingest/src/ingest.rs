//! [`Ingest`]: built once, shared by every request (its state sits behind
//! one `Arc`: the Redis connection, the batcher, the counters), and turned
//! into an axum [`Router`] for `sluice dev` (through [`serve`](crate::serve))
//! or the Lambda.
//!
//! Routes: `POST /webhooks/cafe24` (202 with a [`Receipt`], or a
//! [`Rejection`]), `GET /health` (200 `{"status":"ok"}`); anything else is a
//! JSON 404 or 405, and a request whose head is over `max_head_bytes` a JSON
//! 431 whatever its route.
//!
//! Once a valid webhook starts touching gates, its acceptance runs on a
//! task of its own: a sender that hangs up half-way must not leave a mark
//! set without its message, or an enqueued message without its trace.
//!
//! Back-pressure: at most `max_accepting` webhooks and rows are being
//! accepted at once (each holds a permit until its task ends, answered or
//! not); one more is answered 503 `overloaded` with `Retry-After` before it
//! touches Redis, so a slow Redis or queue costs a bounded number of tasks
//! rather than a queue that grows with the arrival rate. Within a permit,
//! `accept_deadline` bounds the Redis work before the send (`acceptance`).

use crate::acceptance::{Acceptor, FlowControlPort, Receipt};
use crate::batcher::Batcher;
use crate::config::{ConfigError, IngestConfig};
use crate::counters::{CounterSnapshot, Counters};
use crate::rejection::{ErrorCode, Rejection};
use crate::server::{ServeLimits, limit_head};
use crate::sheet_rows::{self, SHEET_ROWS_PATH};
use crate::tenants::TenantCheck;
use crate::webhook;
use crate::{ApiKeys, KeyScope, SheetGrant, TopicTable};
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, FailedToBufferBody};
use axum::extract::{DefaultBodyLimit, FromRequest, Request, State};
use axum::http::StatusCode;
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use redis::aio::ConnectionLike;
use sluice_cafe24::webhook::API_KEY_HEADER;
use sluice_domain::{CatchUpRequests, SheetWork, WorkQueue};
use sluice_redis::Connection;
use sluice_redis::{
    Backlogs, Deliveries, DeliveryTimes, Enrolments, Gates, GroupLedger, MarkTimes, SheetBuffers, Traces,
};
use std::fmt;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::task::TaskTracker;

/// Where Cafe24 posts webhooks.
pub const WEBHOOK_PATH: &str = "/webhooks/cafe24";
/// Liveness: answers 200 while the process serves.
pub const HEALTH_PATH: &str = "/health";

/// The ingest service. Clones share everything.
pub struct Ingest<C = Connection> {
    shared: Arc<Shared<C>>,
}

struct Shared<C> {
    api_keys: ApiKeys,
    topics: TopicTable,
    max_body_bytes: usize,
    max_head_bytes: usize,
    serve_limits: ServeLimits,
    acceptor: Acceptor<C>,
    counters: Arc<Counters>,
    /// One permit per webhook or row being accepted (`max_accepting`).
    accepting: Arc<Semaphore>,
    max_accepting: usize,
    /// Each acceptance runs on a task of its own, finishing even when its
    /// sender left: waited for before the batcher stops.
    acceptances: TaskTracker,
}

impl<C> Clone for Ingest<C> {
    fn clone(&self) -> Self {
        Self { shared: self.shared.clone() }
    }
}

impl<C> fmt::Debug for Ingest<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ingest")
            .field("api_keys", &self.shared.api_keys)
            .field("topics", &self.shared.topics)
            .field("counters", &self.shared.counters.snapshot())
            .finish_non_exhaustive()
    }
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> Ingest<C> {
    /// Builds the service over `queue` and one shared Redis connection
    /// (a `Connection` in production: it reconnects on its own).
    /// Starts the batcher, so it must be called within a tokio runtime.
    pub fn new<Q: WorkQueue + 'static>(config: IngestConfig, queue: Q, redis: C) -> Result<Self, ConfigError> {
        Self::build(config, queue, redis, None)
    }

    /// [`Ingest::new`] with flow control per mall: once a mall has
    /// `config.flow_control.max_queued` messages in the queue, its webhooks
    /// go to its dirty set, drained by the requests sent to `drain`.
    pub fn with_flow_control<Q: WorkQueue + 'static>(
        config: IngestConfig,
        queue: Q,
        redis: C,
        drain: Arc<dyn CatchUpRequests>,
    ) -> Result<Self, ConfigError> {
        Self::build(config, queue, redis, Some(drain))
    }

    fn build<Q: WorkQueue + 'static>(
        config: IngestConfig,
        queue: Q,
        redis: C,
        drain: Option<Arc<dyn CatchUpRequests>>,
    ) -> Result<Self, ConfigError> {
        config.check()?;
        let flow = match drain {
            Some(requests) => Some(FlowControlPort {
                backlogs: Backlogs::new(redis.clone(), config.keyspace.clone(), config.flow_control.clone())
                    .map_err(|e| ConfigError::Setting(format!("flow control: {e}")))?,
                requests,
            }),
            None => None,
        };
        let sheets = SheetBuffers::new(redis.clone(), config.keyspace.clone())
            .with_flow(config.sheet_flow.clone())
            .map_err(|e| ConfigError::Setting(format!("flow control per sheet: {e}")))?;
        let counters = Arc::new(Counters::default());
        let acceptor = Acceptor {
            deliveries: Deliveries::new(
                redis.clone(),
                config.keyspace.clone(),
                DeliveryTimes { lease: config.accept_lease, window: config.duplicate_window },
            ),
            gates: Gates::new(redis.clone(), config.keyspace.clone()),
            groups: GroupLedger::new(redis.clone(), config.keyspace.clone()),
            traces: Traces::new(redis.clone(), config.keyspace.clone(), config.trace_retention),
            batcher: Batcher::start(Arc::new(queue), config.batch.clone(), counters.clone()),
            counters: counters.clone(),
            marks: MarkTimes { lease: config.accept_lease, pending: config.pending_timeout },
            deadline: config.effective_accept_deadline(),
            flow,
            sheets,
            tenants: TenantCheck::new(Enrolments::new(redis.clone(), config.keyspace.clone()), config.tenants),
        };
        let shared = Shared {
            api_keys: config.api_keys,
            topics: config.topics,
            max_body_bytes: config.max_body_bytes,
            max_head_bytes: config.max_head_bytes,
            serve_limits: ServeLimits {
                header_read_timeout: config.header_read_timeout,
                max_connections: config.max_connections,
            },
            acceptor,
            counters,
            accepting: Arc::new(Semaphore::new(config.max_accepting)),
            max_accepting: config.max_accepting,
            acceptances: TaskTracker::new(),
        };
        Ok(Self { shared: Arc::new(shared) })
    }

    /// The routes, ready for `axum::serve` or `lambda_http::run`.
    pub fn router(&self) -> Router {
        Router::new()
            .route(WEBHOOK_PATH, post(receive_webhook::<C>))
            .route(SHEET_ROWS_PATH, post(receive_row::<C>))
            .route(HEALTH_PATH, get(health))
            .fallback(not_found)
            .method_not_allowed_fallback(method_not_allowed)
            .layer(DefaultBodyLimit::max(self.shared.max_body_bytes))
            .layer(middleware::from_fn_with_state(self.shared.max_head_bytes, limit_head))
            .with_state(self.shared.clone())
    }

    pub(crate) fn serve_limits(&self) -> ServeLimits {
        self.shared.serve_limits
    }

    /// The live counters (share the `Arc` to read them from elsewhere).
    pub fn counters(&self) -> Arc<Counters> {
        self.shared.counters.clone()
    }

    /// The counters now.
    pub fn snapshot(&self) -> CounterSnapshot {
        self.shared.counters.snapshot()
    }

    /// Waits for the acceptances under way (those whose sender left too),
    /// then sends every message handed to the batcher and waits for the
    /// batches in flight. Call it after the HTTP server has stopped taking
    /// requests (as [`serve`](crate::serve) does); webhooks arriving later
    /// get 503.
    pub async fn shutdown(&self) {
        self.shared.acceptances.close();
        self.shared.acceptances.wait().await;
        self.shared.acceptor.batcher.shutdown().await;
    }
}

async fn receive_webhook<C>(State(shared): State<Arc<Shared<C>>>, request: Request) -> Response
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    shared.counters.received();
    let work = match read(&shared, request).await {
        Ok(work) => work,
        Err(rejection) => return shared.refuse(rejection),
    };
    let permit = match shared.admit("webhook") {
        Ok(permit) => permit,
        Err(rejection) => return shared.refuse(rejection),
    };
    // Settled on its own task: a sender hanging up must not cancel a
    // webhook half way between the queue and its log.
    settle(&shared, "webhook", permit, |s| async move { s.acceptor.accept(work).await }).await
}

async fn receive_row<C>(State(shared): State<Arc<Shared<C>>>, request: Request) -> Response
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    shared.counters.received();
    let authorised =
        authorised_body(&shared, request).await.and_then(|(scope, _, body)| Ok((sheet_grant(scope)?, body)));
    let (grant, body) = match authorised {
        Ok(authorised) => authorised,
        Err(rejection) => return shared.refuse(rejection),
    };
    // A row the key may not write is refused before anything is logged:
    // its trace belongs to the credential's owner.
    let parsed = sheet_rows::parse(&body, now_ms());
    if let Err(rejection) = parsed.as_ref().map_or(Ok(()), |work| check_grant(grant, work)) {
        return shared.refuse(rejection);
    }
    let work = match parsed {
        Ok(work) => work,
        Err(invalid) => {
            if let (Some(credential), Some(row_id)) = (&invalid.credential_id, &invalid.row_id) {
                shared.acceptor.log_invalid_row(credential, row_id, &invalid.rejection).await;
            }
            return shared.refuse(invalid.rejection);
        }
    };
    let permit = match shared.admit("row") {
        Ok(permit) => permit,
        Err(rejection) => return shared.refuse(rejection),
    };
    settle(&shared, "row", permit, |s| async move { s.acceptor.accept_row(work).await }).await
}

/// Runs `accept` (a webhook's or a row's acceptance) on its own task,
/// holding `permit`, counts how it ended and answers it.
async fn settle<C, F, Fut>(shared: &Arc<Shared<C>>, what: &str, permit: OwnedSemaphorePermit, accept: F) -> Response
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
    F: FnOnce(Arc<Shared<C>>) -> Fut,
    Fut: Future<Output = Result<Receipt, Rejection>> + Send + 'static,
{
    let accepting = accept(shared.clone());
    let counters = shared.counters.clone();
    let acceptance = async move {
        let _permit = permit;
        let answer = accepting.await;
        match &answer {
            Ok(receipt) => counters.accepted(receipt.status),
            Err(rejection) => counters.rejected(rejection.code),
        }
        answer
    };
    let answer = shared.acceptances.spawn(acceptance).await;
    match answer {
        Ok(Ok(receipt)) => accepted(receipt),
        Ok(Err(rejection)) => rejection.into_response(),
        Err(panic) => {
            tracing::error!(error = %panic, "accepting a {what} panicked");
            let message = format!("ingest failed while accepting this {what}; send it again");
            shared.refuse(Rejection::new(ErrorCode::QueueUnavailable, message))
        }
    }
}

impl<C> Shared<C> {
    /// The answer to a refused request, counted.
    fn refuse(&self, rejection: Rejection) -> Response {
        self.counters.rejected(rejection.code);
        rejection.into_response()
    }

    /// A permit to accept one more webhook or row, or the 503 that refuses
    /// it when `max_accepting` are being accepted already.
    fn admit(&self, what: &str) -> Result<OwnedSemaphorePermit, Rejection> {
        self.accepting.clone().try_acquire_owned().map_err(|_| {
            let busy = self.max_accepting;
            Rejection::new(
                ErrorCode::Overloaded,
                format!(
                    "ingest is accepting {busy} webhooks and rows already, its limit (Redis or the queue is slow); \
                     this {what} was not looked at, send it again"
                ),
            )
        })
    }
}

/// Verifies the key is a webhook key, reads the body within its limit,
/// and parses it.
async fn read<C>(shared: &Shared<C>, request: Request) -> Result<sluice_domain::ShopWork, Rejection> {
    let (scope, headers, body) = authorised_body(shared, request).await?;
    if !scope.webhooks {
        return Err(Rejection::new(
            ErrorCode::Forbidden,
            format!("this X-API-Key may not post webhooks (it is a key for {SHEET_ROWS_PATH} only)"),
        ));
    }
    webhook::parse(&headers, &body, &shared.topics, now_ms())
}

/// The grant of a key allowed to post rows, or the 403 that refuses one
/// that is not.
fn sheet_grant(scope: &KeyScope) -> Result<&SheetGrant, Rejection> {
    scope.sheets.as_ref().ok_or_else(|| {
        Rejection::new(
            ErrorCode::Forbidden,
            format!("this X-API-Key may not post rows (it is a key for {WEBHOOK_PATH} only); ask for a sheet key"),
        )
    })
}

/// Whether `grant` lets the row be written; the 403 naming the field if not.
fn check_grant(grant: &SheetGrant, work: &SheetWork) -> Result<(), Rejection> {
    let row = &work.row;
    grant.allows(&row.credential_id, &row.spreadsheet_id).map_err(|field| Rejection {
        code: ErrorCode::Forbidden,
        message: format!("field `{field}`: this X-API-Key may not write rows there"),
        field: Some(field.to_owned()),
    })
}

/// Verifies the key, then reads the body within its limit: the key's
/// scope, the headers and the body.
async fn authorised_body<C>(
    shared: &Shared<C>,
    request: Request,
) -> Result<(&KeyScope, axum::http::HeaderMap, Bytes), Rejection> {
    let key = request.headers().get(API_KEY_HEADER).map(|v| v.as_bytes());
    let Some(scope) = shared.api_keys.verify(key) else {
        return Err(Rejection::new(ErrorCode::Unauthorized, "X-API-Key is missing or is not a configured key"));
    };
    let headers = request.headers().clone();
    let body = Bytes::from_request(request, &()).await.map_err(|e| match e {
        BytesRejection::FailedToBufferBody(FailedToBufferBody::LengthLimitError(_)) => Rejection::new(
            ErrorCode::PayloadTooLarge,
            format!("the body is larger than {} bytes", shared.max_body_bytes),
        ),
        other => Rejection::new(ErrorCode::InvalidJson, format!("the body could not be read: {other}")),
    })?;
    Ok((scope, headers, body))
}

fn accepted(receipt: Receipt) -> Response {
    (StatusCode::ACCEPTED, Json(receipt)).into_response()
}

async fn health() -> Response {
    Json(serde_json::json!({"status": "ok"})).into_response()
}

async fn not_found() -> Response {
    Rejection::new(ErrorCode::NotFound, format!("no such route; webhooks go to POST {WEBHOOK_PATH}")).into_response()
}

async fn method_not_allowed() -> Response {
    Rejection::new(ErrorCode::MethodNotAllowed, "method not allowed on this route").into_response()
}

fn now_ms() -> u64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}
