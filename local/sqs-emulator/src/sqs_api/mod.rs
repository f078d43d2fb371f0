//! The SQS-compatible endpoint: the embedded queue over SQS's own wire
//! protocol, AWS JSON 1.0 (`POST /`, `X-Amz-Target: AmazonSQS.<Action>`,
//! `Content-Type: application/x-amz-json-1.0`), so `aws-sdk-sqs` (and with
//! it the `sluice-aws` adapter), boto3 and the AWS CLI work against it with
//! only an endpoint override.
//!
//! Actions: CreateQueue, GetQueueUrl, ListQueues, DeleteQueue, PurgeQueue,
//! GetQueueAttributes, SendMessage, SendMessageBatch, ReceiveMessage,
//! DeleteMessage, DeleteMessageBatch, ChangeMessageVisibility,
//! ChangeMessageVisibilityBatch, StartMessageMoveTask,
//! ListMessageMoveTasks, ListDeadLetterSourceQueues. Any other action is
//! answered `UnsupportedOperation`, naming it.
//!
//! Both kinds of queue, told apart by the name as SQS does: a FIFO queue's
//! ends in `.fifo` (and is created with `FifoQueue=true`); any other is a
//! standard queue, with per-message and per-queue `DelaySeconds` and no
//! group or deduplication id. Each parameter a kind does not take is
//! refused as SQS refuses it: a non-zero `DelaySeconds` on a FIFO message,
//! `MessageDeduplicationId` on a standard one (`InvalidParameterValue`,
//! "The request include parameter that is not valid for this queue
//! type."), `ContentBasedDeduplication` and the other FIFO attributes when
//! creating a standard queue (`InvalidAttributeName`). Where SQS has more
//! than the embedded queue implements (message attributes, retention, a
//! FIFO queue's queue-wide delay, a `MessageGroupId` on a standard queue,
//! which makes SQS's *fair queues*), the request is refused with an error
//! naming what is missing, never silently ignored. ReceiveMessage's
//! `ReceiveRequestAttemptId` works on FIFO queues and is ignored on
//! standard ones, which SQS says it does not apply to
//! (`crate::receive_attempt`). Requests are not authenticated: the
//! endpoint listens on 127.0.0.1 for development.
//!
//! Queue URLs are `<base>/<account>/<name>` and ARNs
//! `arn:aws:sqs:<region>:<account>:<name>`, with account `000000000000`.
//!
//! # Layout
//!
//! - `queues`: CreateQueue, GetQueueUrl, ListQueues, DeleteQueue,
//!   PurgeQueue, GetQueueAttributes.
//! - `send`: SendMessage, SendMessageBatch (both kinds).
//! - `messages`: ReceiveMessage, DeleteMessage(Batch),
//!   ChangeMessageVisibility(Batch).
//! - `move_tasks`: StartMessageMoveTask, ListMessageMoveTasks,
//!   ListDeadLetterSourceQueues.
//! - `wire`: the request shapes; `error`: SQS's error shape and codes.

pub(crate) mod error;
mod messages;
mod move_tasks;
mod queues;
mod send;
mod wire;

use crate::aws_json::{self, TargetError};
use crate::backend::QueueBackend;
use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::HeaderMap;
use axum::response::Response;
use error::ApiError;
use messages::ReceiptAction;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// The account id in queue URLs and ARNs.
pub const ACCOUNT_ID: &str = "000000000000";
/// The region in ARNs.
pub const REGION: &str = "us-east-1";

/// The endpoint's state: the store and the URL clients reach it at.
#[derive(Debug)]
pub struct SqsApi<B> {
    backend: B,
    base_url: String,
    move_tasks: move_tasks::MoveTasks,
    /// Cancelled when [`serve`] is told to stop: long polls then answer
    /// at once.
    stop_waiting: CancellationToken,
}

impl<B: QueueBackend> SqsApi<B> {
    /// An endpoint over `backend`, reached at `base_url` (e.g.
    /// `http://127.0.0.1:9324`), which queue URLs start with.
    pub fn new(backend: B, base_url: impl Into<String>) -> Self {
        let base_url = base_url.into().trim_end_matches('/').to_owned();
        Self { backend, base_url, move_tasks: move_tasks::MoveTasks::default(), stop_waiting: CancellationToken::new() }
    }

    /// The URL of queue `name`.
    pub fn queue_url(&self, name: &str) -> String {
        format!("{}/{ACCOUNT_ID}/{name}", self.base_url)
    }

    /// The name a request's `QueueUrl` points at, if it is one of this
    /// endpoint's form (`MissingParameter` without one). The host is not
    /// compared: SQS clients may reach us by any name.
    pub(crate) fn queue_name<'u>(&self, url: Option<&'u str>) -> Result<&'u str, ApiError> {
        let url = wire::required(url, "QueueUrl")?;
        let missing = || ApiError::queue_does_not_exist("The specified queue does not exist.");
        let mut segments = url.trim_end_matches('/').rsplit('/');
        let name = segments.next().filter(|n| !n.is_empty()).ok_or_else(missing)?;
        match segments.next() {
            Some(ACCOUNT_ID) => Ok(name),
            _ => Err(missing()),
        }
    }

    pub(crate) fn queue_arn(&self, name: &str) -> String {
        format!("arn:aws:sqs:{REGION}:{ACCOUNT_ID}:{name}")
    }

    /// The queue name an ARN of ours names.
    pub(crate) fn arn_name<'a>(&self, arn: &'a str) -> Option<&'a str> {
        let mut parts = arn.splitn(6, ':');
        let fields: [Option<&str>; 6] = std::array::from_fn(|_| parts.next());
        match fields {
            [Some("arn"), Some(_), Some("sqs"), Some(_), Some(ACCOUNT_ID), Some(name)] if !name.is_empty() => {
                Some(name)
            }
            _ => None,
        }
    }

    pub(crate) fn backend(&self) -> &B {
        &self.backend
    }
}

/// The largest request body the endpoint reads: a full `SendMessageBatch`
/// (1 MiB of messages) with room for its JSON escaping. A larger one is
/// refused with SQS's JSON error shape (413), like every other refusal.
pub const MAX_REQUEST_BYTES: usize = 2 * 1024 * 1024;

/// The endpoint as an axum router: every request is a `POST` carrying its
/// action in `X-Amz-Target`.
pub fn router<B: QueueBackend>(api: SqsApi<B>) -> Router {
    Router::new().fallback(handle::<B>).layer(DefaultBodyLimit::max(MAX_REQUEST_BYTES)).with_state(Arc::new(api))
}

/// Serves `api` on `listener` until `shutdown` completes, then answers the
/// requests in progress (long polls at once, with what they have) and
/// returns.
pub async fn serve<B: QueueBackend>(
    listener: TcpListener,
    api: SqsApi<B>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let stop = api.stop_waiting.clone();
    let shutdown = async move {
        shutdown.await;
        stop.cancel();
    };
    axum::serve(listener, router(api)).with_graceful_shutdown(shutdown).await
}

async fn handle<B: QueueBackend>(
    State(api): State<Arc<SqsApi<B>>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    aws_json::answer(body, |body| async move { dispatch(&api, &headers, &body).await }).await
}

async fn dispatch<B: QueueBackend>(api: &SqsApi<B>, headers: &HeaderMap, body: &[u8]) -> Result<Value, ApiError> {
    let action = aws_json::operation(headers, "AmazonSQS").map_err(|e| match e {
        TargetError::Missing => ApiError::unknown_operation(
            "No X-Amz-Target header: this endpoint speaks SQS's AWS JSON 1.0 protocol (X-Amz-Target: \
             AmazonSQS.<Action>), not the older Query protocol",
        ),
        TargetError::OtherService(target) => {
            ApiError::unknown_operation(format!("X-Amz-Target {target:?} is not an SQS action (AmazonSQS.<Action>)"))
        }
    })?;
    match action {
        "CreateQueue" => queues::create_queue(api, parse(body)?).await,
        "GetQueueUrl" => queues::get_queue_url(api, parse(body)?).await,
        "ListQueues" => queues::list_queues(api, parse(body)?).await,
        "DeleteQueue" => queues::delete_queue(api, parse(body)?).await,
        "PurgeQueue" => queues::purge_queue(api, parse(body)?).await,
        "GetQueueAttributes" => queues::get_queue_attributes(api, parse(body)?).await,
        "SendMessage" => send::send_message(api, parse(body)?).await,
        "SendMessageBatch" => send::send_message_batch(api, parse(body)?).await,
        "ReceiveMessage" => messages::receive_message(api, parse(body)?).await,
        "DeleteMessage" => messages::receipt_one(api, parse(body)?, ReceiptAction::Delete).await,
        "DeleteMessageBatch" => messages::receipt_batch(api, parse(body)?, ReceiptAction::Delete).await,
        "ChangeMessageVisibility" => messages::receipt_one(api, parse(body)?, ReceiptAction::ChangeVisibility).await,
        "ChangeMessageVisibilityBatch" => {
            messages::receipt_batch(api, parse(body)?, ReceiptAction::ChangeVisibility).await
        }
        "StartMessageMoveTask" => move_tasks::start(api, parse(body)?).await,
        "ListMessageMoveTasks" => move_tasks::list(api, parse(body)?).await,
        "ListDeadLetterSourceQueues" => move_tasks::dead_letter_sources(api, parse(body)?).await,
        other => {
            Err(ApiError::unsupported_operation(format!("{other} is not supported by sluice's embedded SQS endpoint")))
        }
    }
}

/// Parses a request body; an empty body is an empty request.
fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    aws_json::parse(body)
}
