//! Each port method of both queue adapters calls exactly the AWS
//! operations its list (`SqsQueueOf::*_CALLS`) names: a stand-in speaking
//! SQS's JSON protocol records the `X-Amz-Target` of every request the real
//! SDK client sends, and answers each operation well enough for the method
//! to finish. A method that starts calling something else (a
//! GetQueueAttributes before each receive, say) fails here, and with it
//! the list the template's IAM check reads.

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};
use sluice_aws::{ApiCall, SqsDelayQueue, SqsEndpoint, SqsQueue, sqs_client};
use sluice_domain::queue::{DelayedMessage, OutgoingMessage, ReceiptHandle, ReceiveRequest};
use sluice_domain::{DedupId, DelayQueue, GroupKey, Queue, WorkQueue};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The operations called, in order.
type Recorded = Arc<Mutex<Vec<String>>>;

/// A received message with every system attribute either adapter reads.
fn message() -> Value {
    json!({"MessageId": "m-1", "ReceiptHandle": "r-1", "MD5OfBody": "x", "Body": "b", "Attributes": {
        "MessageGroupId": "g", "MessageDeduplicationId": "d", "SequenceNumber": "1",
        "ApproximateReceiveCount": "1", "SentTimestamp": "1700000000000",
        "ApproximateFirstReceiveTimestamp": "1700000000000"}})
}

async fn sqs(State(recorded): State<Recorded>, headers: HeaderMap, body: Bytes) -> (StatusCode, HeaderMap, String) {
    let target = headers.get("x-amz-target").and_then(|t| t.to_str().ok()).unwrap_or_default();
    let operation = target.strip_prefix("AmazonSQS.").unwrap_or(target).to_owned();
    recorded.lock().unwrap().push(operation.clone());
    let request: Value = serde_json::from_slice(&body).unwrap_or_default();
    let answer = match operation.as_str() {
        "SendMessageBatch" => {
            let ok: Vec<Value> = request["Entries"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|e| json!({"Id": e["Id"], "MessageId": "m-1", "MD5OfMessageBody": "x", "SequenceNumber": "1"}))
                .collect();
            json!({"Successful": ok, "Failed": []})
        }
        "ReceiveMessage" => json!({"Messages": [message()]}),
        "DeleteMessage" | "ChangeMessageVisibility" => json!({}),
        "GetQueueAttributes" => json!({"Attributes": {"ApproximateNumberOfMessages": "0",
            "ApproximateNumberOfMessagesNotVisible": "0", "ApproximateNumberOfMessagesDelayed": "0"}}),
        // Recorded all the same: the comparison names it.
        _ => json!({}),
    };
    let mut out = HeaderMap::new();
    out.insert("content-type", "application/x-amz-json-1.0".parse().unwrap());
    (StatusCode::OK, out, answer.to_string())
}

async fn stand_in() -> (String, Recorded) {
    let recorded = Recorded::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = Router::new().fallback(sqs).with_state(recorded.clone());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, recorded)
}

/// What was called since the last take.
fn take(recorded: &Recorded) -> Vec<String> {
    std::mem::take(&mut *recorded.lock().unwrap())
}

fn operations(calls: &[ApiCall]) -> Vec<String> {
    calls.iter().map(|c| c.operation.to_owned()).collect()
}

fn receipt() -> ReceiptHandle {
    ReceiptHandle::new("r-1")
}

fn request() -> ReceiveRequest {
    ReceiveRequest::new(1, Duration::from_secs(30), Duration::ZERO).unwrap()
}

/// The methods both ports have alike (`receive`, `delete`,
/// `change_visibility`, `attributes`): each of `$queue`'s calls what
/// `$Queue`'s list for it names. A macro, as they are two traits' methods.
macro_rules! shared_methods_call_their_lists {
    ($queue:ident, $Queue:ty, $recorded:ident) => {
        assert_eq!($queue.receive(request()).await.unwrap().len(), 1);
        assert_eq!(take(&$recorded), operations(<$Queue>::RECEIVE_CALLS), "receive");
        $queue.delete(&receipt()).await.unwrap();
        assert_eq!(take(&$recorded), operations(<$Queue>::DELETE_CALLS), "delete");
        $queue.change_visibility(&receipt(), Duration::from_secs(5)).await.unwrap();
        assert_eq!(take(&$recorded), operations(<$Queue>::CHANGE_VISIBILITY_CALLS), "change_visibility");
        $queue.attributes().await.unwrap();
        assert_eq!(take(&$recorded), operations(<$Queue>::ATTRIBUTES_CALLS), "attributes");
    };
}

#[tokio::test]
async fn the_work_queue_calls_what_its_lists_name() {
    let (url, recorded) = stand_in().await;
    let queue = SqsQueue::new(sqs_client(&SqsEndpoint::Local(url.clone())).await, format!("{url}/1/q.fifo"));
    let sent = OutgoingMessage::new(GroupKey::parse("g").unwrap(), DedupId::parse("d").unwrap(), "b");
    assert!(queue.send_batch(&[sent]).await[0].is_accepted());
    assert_eq!(take(&recorded), operations(SqsQueue::SEND_CALLS), "send_batch");
    shared_methods_call_their_lists!(queue, SqsQueue, recorded);
}

#[tokio::test]
async fn the_delay_queue_calls_what_its_lists_name() {
    let (url, recorded) = stand_in().await;
    let queue = SqsDelayQueue::new(sqs_client(&SqsEndpoint::Local(url.clone())).await, format!("{url}/1/q"));
    queue.send_delayed(&DelayedMessage::new("b", Duration::from_secs(3))).await.unwrap();
    assert_eq!(take(&recorded), operations(SqsDelayQueue::SEND_CALLS), "send_delayed");
    shared_methods_call_their_lists!(queue, SqsDelayQueue, recorded);
}

/// The recorder sees what is sent, not what the lists say: a list naming
/// another operation than the one sent would not compare equal.
#[tokio::test]
async fn the_recorder_tells_one_operation_from_another() {
    let (url, recorded) = stand_in().await;
    let queue = SqsQueue::new(sqs_client(&SqsEndpoint::Local(url.clone())).await, format!("{url}/1/q.fifo"));
    queue.attributes().await.unwrap();
    assert_ne!(take(&recorded), operations(SqsQueue::RECEIVE_CALLS));
}

/// Every list names, for each operation, the IAM action that allows it
/// (`SecretsReader::CALLS`: `tests/secrets.rs`).
#[test]
fn every_listed_action_is_the_one_iam_documents_for_its_operation() {
    let lists = [
        SqsQueue::SEND_CALLS,
        SqsQueue::RECEIVE_CALLS,
        SqsQueue::DELETE_CALLS,
        SqsQueue::CHANGE_VISIBILITY_CALLS,
        SqsQueue::ATTRIBUTES_CALLS,
    ];
    for call in lists.iter().flat_map(|l| l.iter()) {
        assert!(action_matches_operation(call), "{call:?}");
    }
}

/// The suffix by which IAM's SQS actions differ from the batch operations
/// they allow.
const BATCH: &str = "Batch";

/// Whether `call`'s action is the one IAM documents for its operation:
/// `service:Operation`, and for SQS's batch operations the single-message
/// action ("setting permissions for SendMessage, DeleteMessage, or
/// ChangeMessageVisibility sets permissions for the corresponding batch
/// versions", Amazon SQS Developer Guide, batch actions).
pub(crate) fn action_matches_operation(call: &ApiCall) -> bool {
    let Some((service, action)) = call.action.split_once(':') else { return false };
    let single = match service {
        "sqs" => call.operation.strip_suffix(BATCH).unwrap_or(call.operation),
        _ => call.operation,
    };
    action == single
}

#[test]
fn an_sqs_batch_operation_is_allowed_by_its_single_message_action() {
    assert!(action_matches_operation(&ApiCall::new("SendMessageBatch", "sqs:SendMessage")));
    assert!(action_matches_operation(&ApiCall::new("GetSecretValue", "secretsmanager:GetSecretValue")));
    assert!(!action_matches_operation(&ApiCall::new("SendMessageBatch", "sqs:SendMessageBatch")));
    assert!(!action_matches_operation(&ApiCall::new("ReceiveMessage", "sqs:SendMessage")));
    assert!(!action_matches_operation(&ApiCall::new("ReceiveMessage", "ReceiveMessage")));
}
