//! The delay queue adapter's SendMessageBatch, against the scripted
//! endpoint of `support`: what each entry carries on the wire (its delay
//! only when it names one, never a group or deduplication id), and which
//! failed entries are retried. Its behaviour against a queue is in the
//! conformance suite (`local/sqs-emulator/tests/conformance`), through the
//! embedded queue's SQS endpoint.

use crate::support;

use sluice_aws::{SqsDelayQueue, SqsEndpoint, SqsError, sqs_client};
use sluice_domain::DelayQueue;
use sluice_domain::queue::DelayedMessage;
use sluice_domain::queue::rules::RuleViolation;
use std::sync::Arc;
use std::time::Duration;
use support::{Answer, Script};

async fn scripted(answers: Vec<Answer>) -> (SqsDelayQueue, Arc<Script>) {
    let (url, script) = support::serve(answers).await;
    let client = sqs_client(&SqsEndpoint::Local(url.clone())).await;
    let queue = SqsDelayQueue::new(client, format!("{url}/000000000000/flush"));
    (queue.with_retry(support::quick_retry()), script)
}

#[tokio::test]
async fn an_entry_carries_its_own_delay_or_none_and_never_a_group() {
    let (queue, script) = scripted(vec![vec![("0", "ok"), ("1", "ok")]]).await;
    let entries = [DelayedMessage::new("soon", Duration::from_secs(7)), DelayedMessage::queue_default("default")];
    let outcomes = queue.send_delayed_batch(&entries).await;
    let ids: Vec<&str> = outcomes.iter().map(|o| o.as_ref().unwrap().as_str()).collect();
    assert_eq!(ids, ["m-0", "m-1"]);
    let call = &script.calls()[0];
    assert_eq!(call[0]["DelaySeconds"], 7);
    assert!(call[1].get("DelaySeconds").is_none(), "no delay named: the queue's applies: {}", call[1]);
    for entry in call {
        assert!(entry.get("MessageGroupId").is_none() && entry.get("MessageDeduplicationId").is_none(), "{entry}");
    }
}

#[tokio::test]
async fn retryable_failures_are_retried_and_the_sender_s_are_reported() {
    let (queue, script) =
        scripted(vec![vec![("0", "ok"), ("1", "retry"), ("2", "sender")], vec![("1", "retry")], vec![("1", "ok")]])
            .await;
    let entries: Vec<_> = (0..3).map(|i| DelayedMessage::new(format!("m{i}"), Duration::from_secs(1))).collect();
    let outcomes = queue.send_delayed_batch(&entries).await;
    assert_eq!(script.ids(), [vec!["0", "1", "2"], vec!["1"], vec!["1"]]);
    assert_eq!(script.calls()[2][0]["DelaySeconds"], 1, "a retry sends the same entry, delay included");
    assert_eq!(outcomes[0].as_ref().unwrap().as_str(), "m-0");
    assert_eq!(outcomes[1].as_ref().unwrap().as_str(), "m-1");
    let refused = outcomes[2].as_ref().unwrap_err();
    assert!(refused.sender_fault && refused.code == "InvalidParameterValue", "{refused:?}");
}

#[tokio::test]
async fn a_delay_sqs_would_refuse_never_reaches_it() {
    let (queue, script) = scripted(vec![vec![("0", "ok")]]).await;
    let entries =
        [DelayedMessage::new("too late", Duration::from_secs(901)), DelayedMessage::new("ok", Duration::ZERO)];
    let outcomes = queue.send_delayed_batch(&entries).await;
    let refused = outcomes[0].as_ref().unwrap_err();
    assert!(refused.sender_fault && refused.message.contains("DelaySeconds"), "{refused:?}");
    assert!(outcomes[1].is_ok());
    assert_eq!(script.ids(), [vec!["0"]], "only the valid entry was sent");

    let late = DelayedMessage::new("late", Duration::from_millis(1500));
    let err = queue.send_delayed_call(&[&late]).await.unwrap_err();
    assert!(matches!(err, SqsError::Rule(RuleViolation::Seconds { what: "DelaySeconds", .. })), "{err}");
    assert_eq!(script.calls().len(), 1, "refused before sending");
}
