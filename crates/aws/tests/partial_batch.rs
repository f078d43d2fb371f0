//! A partly failed SendMessageBatch. SQS fails single entries only under
//! its own load (throttling, internal errors), which no local endpoint can
//! be made to do, so this test stands in a scripted endpoint that speaks
//! SQS's JSON protocol and answers each call as the script says, and
//! records what each call carried.

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};
use sluice_aws::{BatchRetry, SqsEndpoint, SqsQueue, sqs_client};
use sluice_domain::queue::rules::{MAX_PAYLOAD_BYTES, RuleViolation};
use sluice_domain::queue::{OutgoingMessage, SendOutcome};
use sluice_domain::{DedupId, GroupKey, WorkQueue};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One scripted answer: entry id -> "ok" | "retry" | "sender"; ids absent
/// from it are left out of the answer altogether.
type Answer = Vec<(&'static str, &'static str)>;

#[derive(Debug, Default)]
struct Script {
    answers: Mutex<Vec<Answer>>,
    /// The entry ids (and bodies) of every call, in order.
    calls: Mutex<Vec<Vec<(String, String)>>>,
}

async fn sqs(State(script): State<Arc<Script>>, headers: HeaderMap, body: Bytes) -> (StatusCode, HeaderMap, String) {
    assert_eq!(headers["x-amz-target"], "AmazonSQS.SendMessageBatch");
    let request: Value = serde_json::from_slice(&body).unwrap();
    let entries: Vec<(String, String)> = request["Entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["Id"].as_str().unwrap().to_owned(), e["MessageBody"].as_str().unwrap().to_owned()))
        .collect();
    for e in request["Entries"].as_array().unwrap() {
        assert!(e["MessageGroupId"].is_string() && e["MessageDeduplicationId"].is_string(), "{e}");
    }
    script.calls.lock().unwrap().push(entries);
    let answer = script.answers.lock().unwrap().remove(0);
    let (mut successful, mut failed) = (Vec::new(), Vec::new());
    for (id, how) in answer {
        match how {
            "ok" => successful.push(
                json!({"Id": id, "MessageId": format!("m-{id}"), "MD5OfMessageBody": "x", "SequenceNumber": "1"}),
            ),
            "retry" => {
                failed.push(json!({"Id": id, "SenderFault": false, "Code": "InternalError", "Message": "try again"}))
            }
            _ => failed.push(json!({"Id": id, "SenderFault": true, "Code": "InvalidParameterValue", "Message": "no"})),
        }
    }
    let mut headers = HeaderMap::new();
    headers.insert("content-type", "application/x-amz-json-1.0".parse().unwrap());
    (StatusCode::OK, headers, json!({"Successful": successful, "Failed": failed}).to_string())
}

async fn scripted(answers: Vec<Answer>) -> (SqsQueue, Arc<Script>) {
    let script = Arc::new(Script { answers: Mutex::new(answers), calls: Mutex::default() });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = Router::new().fallback(sqs).with_state(script.clone());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let retry =
        BatchRetry { attempts: 4, first_backoff: Duration::from_millis(1), max_backoff: Duration::from_millis(4) };
    let queue = SqsQueue::new(sqs_client(&SqsEndpoint::Local(url.clone())).await, format!("{url}/000000000000/q.fifo"));
    (queue.with_retry(retry), script)
}

fn message(i: usize) -> OutgoingMessage {
    OutgoingMessage::new(
        GroupKey::parse(&format!("g{i}")).unwrap(),
        DedupId::parse(&format!("d{i}")).unwrap(),
        format!("m{i}"),
    )
}

#[tokio::test]
async fn only_failed_retryable_entries_are_retried_and_none_is_reported_sent_unless_sqs_took_it() {
    let (queue, script) = scripted(vec![
        // 0 taken, 1 retryable, 2 the sender's fault, 3 not mentioned, and
        // an id never sent claimed as taken.
        vec![("0", "ok"), ("1", "retry"), ("2", "sender"), ("9", "ok")],
        vec![("1", "ok"), ("3", "retry")],
        vec![("3", "retry")],
        vec![("3", "retry")],
    ])
    .await;
    let entries: Vec<_> = (0..4).map(message).collect();
    let outcomes = queue.send_batch(&entries).await;

    let calls: Vec<Vec<String>> =
        script.calls.lock().unwrap().iter().map(|c| c.iter().map(|(id, _)| id.clone()).collect()).collect();
    assert_eq!(calls, [vec!["0", "1", "2", "3"], vec!["1", "3"], vec!["3"], vec!["3"]]);
    let bodies: Vec<String> = script.calls.lock().unwrap()[1].iter().map(|(_, b)| b.clone()).collect();
    assert_eq!(bodies, ["m1", "m3"], "a retry sends the same entries again");

    match &outcomes[..] {
        [SendOutcome::Accepted(a0), SendOutcome::Accepted(a1), SendOutcome::Failed(f2), SendOutcome::Failed(f3)] => {
            assert_eq!((a0.message_id.as_str(), a1.message_id.as_str()), ("m-0", "m-1"));
            assert!(f2.sender_fault && f2.code == "InvalidParameterValue", "{f2:?}");
            assert!(!f3.sender_fault && f3.code == "InternalError", "{f3:?}");
            assert!(f3.message.contains("after 4 attempts"), "{f3:?}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn rule_breaking_messages_never_reach_sqs() {
    let (queue, script) = scripted(vec![vec![("0", "ok")]]).await;
    let too_long = OutgoingMessage::new(
        GroupKey::parse("big").unwrap(),
        DedupId::parse("big").unwrap(),
        "x".repeat(MAX_PAYLOAD_BYTES + 1),
    );
    let outcomes = queue.send_batch(&[too_long, message(0)]).await;
    let SendOutcome::Failed(f) = &outcomes[0] else { panic!("{outcomes:?}") };
    assert!(f.sender_fault && f.code == "InvalidParameterValue" && f.message.contains("1 MiB"), "{f:?}");
    assert!(outcomes[1].is_accepted());
    assert_eq!(script.calls.lock().unwrap().len(), 1);
    assert_eq!(script.calls.lock().unwrap()[0].len(), 1, "only the valid entry was sent");

    let eleven: Vec<_> = (0..11).map(message).collect();
    let refs: Vec<&OutgoingMessage> = eleven.iter().collect();
    let err = queue.send_call(&refs).await.unwrap_err();
    assert!(matches!(err, sluice_aws::SqsError::Rule(RuleViolation::TooManyEntries { count: 11 })), "{err}");
    assert_eq!(script.calls.lock().unwrap().len(), 1, "refused before sending");
}
