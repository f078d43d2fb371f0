//! A partly failed SendMessageBatch on the FIFO work queue, against the
//! scripted endpoint of `support` (SQS fails single entries only under its
//! own load, which no local endpoint can be made to do).

use crate::support;

use sluice_aws::{SqsEndpoint, SqsQueue, sqs_client};
use sluice_domain::queue::rules::{MAX_PAYLOAD_BYTES, RuleViolation};
use sluice_domain::queue::{OutgoingMessage, SendOutcome};
use sluice_domain::{DedupId, GroupKey, WorkQueue};
use std::sync::Arc;
use support::{Answer, Script};

async fn scripted(answers: Vec<Answer>) -> (SqsQueue, Arc<Script>) {
    let (url, script) = support::serve(answers).await;
    let queue = SqsQueue::new(sqs_client(&SqsEndpoint::Local(url.clone())).await, format!("{url}/000000000000/q.fifo"));
    (queue.with_retry(support::quick_retry()), script)
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

    assert_eq!(script.ids(), [vec!["0", "1", "2", "3"], vec!["1", "3"], vec!["3"], vec!["3"]]);
    let calls = script.calls();
    for entry in calls.iter().flatten() {
        assert!(entry["MessageGroupId"].is_string() && entry["MessageDeduplicationId"].is_string(), "{entry}");
    }
    let bodies: Vec<&str> = calls[1].iter().map(|e| e["MessageBody"].as_str().unwrap()).collect();
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
    assert_eq!(script.ids(), [vec!["0"]], "only the valid entry was sent");

    let eleven: Vec<_> = (0..11).map(message).collect();
    let refs: Vec<&OutgoingMessage> = eleven.iter().collect();
    let err = queue.send_call(&refs).await.unwrap_err();
    assert!(matches!(err, sluice_aws::SqsError::Rule(RuleViolation::TooManyEntries { count: 11 })), "{err}");
    assert_eq!(script.calls().len(), 1, "refused before sending");
}
