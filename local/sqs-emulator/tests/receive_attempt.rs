//! `ReceiveRequestAttemptId` through the real `aws-sdk-sqs` client, on the
//! endpoint over the Redis store (a real redis-server) and over the
//! in-memory store: a retried receive answers the same messages and
//! receipt handles, other attempts do not get them, and a retry whose
//! messages were changed meanwhile is refused as SQS refuses it (the rules:
//! `src/receive_attempt.rs`).

use aws_sdk_sqs::Client;
use aws_sdk_sqs::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_sqs::operation::receive_message::ReceiveMessageError;
use aws_sdk_sqs::types::{MessageSystemAttributeName, QueueAttributeName};
use sluice_aws::{SqsEndpoint, sqs_client};
use sluice_sqs_emulator::sqs_api::{self, SqsApi};
use sluice_sqs_emulator::{MemoryBackend, QueueBackend, RedisBackend};
use sluice_testkit::TestRedis;

/// Long enough that nothing becomes visible again by itself during a test.
const VISIBILITY: i32 = 600;
const SPENT: &str = "The receiveRequestAttemptId is not valid anymore since the receive call is not retryable.";

struct Endpoint {
    client: Client,
    /// The test's own Redis keys, kept until the test ends (Redis form).
    redis: Option<TestRedis>,
}

async fn serve<B: QueueBackend>(backend: B, redis: Option<TestRedis>) -> Endpoint {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let api = SqsApi::new(backend, &url);
    tokio::spawn(async move { sqs_api::serve(listener, api, std::future::pending()).await.unwrap() });
    Endpoint { client: sqs_client(&SqsEndpoint::Local(url)).await, redis }
}

async fn memory() -> Endpoint {
    serve(MemoryBackend::new(), None).await
}

async fn in_redis(redis: TestRedis) -> Endpoint {
    let backend = RedisBackend::new(redis.conn().await, redis.keyspace());
    serve(backend, Some(redis)).await
}

/// What a receive answered of a message: body, receipt handle, receive count.
type Got = (String, String, String);
type Receive = Result<Vec<Got>, SdkError<ReceiveMessageError, aws_sdk_sqs::config::http::HttpResponse>>;

impl Endpoint {
    async fn fifo(&self, name: &str) -> String {
        let created =
            self.client.create_queue().queue_name(name).attributes(QueueAttributeName::FifoQueue, "true").send().await;
        created.expect("CreateQueue").queue_url().unwrap().to_owned()
    }

    async fn send(&self, queue: &str, group: &str, body: &str) {
        let send = self.client.send_message().queue_url(queue).message_body(body).message_group_id(group);
        send.message_deduplication_id(body).send().await.expect("SendMessage");
    }

    async fn receive(&self, queue: &str, attempt: &str, max: i32, visibility: i32) -> Receive {
        let answer = self
            .client
            .receive_message()
            .queue_url(queue)
            .receive_request_attempt_id(attempt)
            .max_number_of_messages(max)
            .visibility_timeout(visibility)
            .message_system_attribute_names(MessageSystemAttributeName::ApproximateReceiveCount)
            .send()
            .await?;
        let count = |m: &aws_sdk_sqs::types::Message| {
            let attrs = m.attributes().expect("attributes asked for");
            attrs[&MessageSystemAttributeName::ApproximateReceiveCount].clone()
        };
        Ok(answer
            .messages()
            .iter()
            .map(|m| (m.body().unwrap().to_owned(), m.receipt_handle().unwrap().to_owned(), count(m)))
            .collect())
    }
}

fn bodies(got: &[Got]) -> Vec<&str> {
    got.iter().map(|(body, _, _)| body.as_str()).collect()
}

/// The status, query error header and message of a refused receive.
fn refusal(answer: Receive) -> (u16, String, String) {
    let err = answer.expect_err("refused");
    let response = err.raw_response().unwrap_or_else(|| panic!("no HTTP response: {err:?}"));
    let status = response.status().as_u16();
    let header = response.headers().get("x-amzn-query-error").unwrap_or_default().to_owned();
    (status, header, err.message().unwrap_or_default().to_owned())
}

async fn the_same_attempt_again_answers_the_same_messages_and_receipts(e: Endpoint) {
    let queue = e.fifo("events.fifo").await;
    for body in ["g1-0", "g1-1"] {
        e.send(&queue, "g1", body).await;
    }
    e.send(&queue, "g2", "g2-0").await;

    let first = e.receive(&queue, "attempt-A", 2, VISIBILITY).await.unwrap();
    assert_eq!(bodies(&first), ["g1-0", "g1-1"]);
    // Asked again, with a different MaxNumberOfMessages even: the same
    // messages under the same receipts, not received a second time.
    let again = e.receive(&queue, "attempt-A", 10, VISIBILITY).await.unwrap();
    assert_eq!(again, first, "same messages, receipt handles and receive counts");
    assert!(again.iter().all(|(_, _, count)| count == "1"));

    // Another attempt does not get the hidden ones: only the other group.
    let other = e.receive(&queue, "attempt-B", 10, VISIBILITY).await.unwrap();
    assert_eq!(bodies(&other), ["g2-0"]);
    assert_eq!(e.receive(&queue, "attempt-A", 1, VISIBILITY).await.unwrap(), first, "B changed nothing of A's");

    // The receipts are the live ones: deleting them empties the queue.
    for (_, receipt, _) in first.iter().chain(&other) {
        e.client.delete_message().queue_url(&queue).receipt_handle(receipt).send().await.expect("DeleteMessage");
    }
    assert!(e.receive(&queue, "attempt-C", 10, 0).await.unwrap().is_empty());

    if let Some(redis) = &e.redis {
        // The attempts are kept in the queue's keys, with SQS's 5 minutes.
        let mut conn = redis.conn().await;
        let keys: Vec<String> = redis.keys().await.into_iter().filter(|k| k.contains(":q:events.fifo:rx")).collect();
        assert_eq!(keys.len(), 2, "rx and rxx: {keys:?}");
        for key in keys {
            let ttl: i64 = redis::cmd("PTTL").arg(&key).query_async(&mut conn).await.unwrap();
            // Set at most a few seconds ago (a slow machine's margin).
            assert!(ttl > 240_000 && ttl <= 300_000, "{key}: {ttl} ms");
        }
    }
}

async fn a_retry_after_a_delete_or_a_visibility_change_is_refused_as_sqs_refuses_it(e: Endpoint) {
    let queue = e.fifo("events.fifo").await;
    for body in ["g1-0", "g1-1"] {
        e.send(&queue, "g1", body).await;
    }
    e.send(&queue, "g2", "g2-0").await;
    let taken = e.receive(&queue, "deleted-one", 2, VISIBILITY).await.unwrap();
    assert_eq!(bodies(&taken), ["g1-0", "g1-1"]);
    e.client.delete_message().queue_url(&queue).receipt_handle(&taken[0].1).send().await.expect("DeleteMessage");

    let (status, header, message) = refusal(e.receive(&queue, "deleted-one", 2, VISIBILITY).await);
    assert_eq!((status, header.as_str()), (400, "InvalidParameterValue;Sender"));
    assert_eq!(message, format!("Value deleted-one for parameter ReceiveRequestAttemptId is invalid. Reason: {SPENT}"));
    // Refused again while it is remembered; the message left in flight
    // stays hidden under its receipt, its group blocked.
    assert_eq!(refusal(e.receive(&queue, "deleted-one", 2, VISIBILITY).await).0, 400);
    let fresh = e.receive(&queue, "fresh", 10, VISIBILITY).await.unwrap();
    assert_eq!(bodies(&fresh), ["g2-0"]);

    // A visibility change spends an attempt too.
    let change = e.client.change_message_visibility().queue_url(&queue).receipt_handle(&fresh[0].1);
    change.visibility_timeout(900).send().await.expect("ChangeMessageVisibility");
    let message = refusal(e.receive(&queue, "fresh", 10, VISIBILITY).await).2;
    assert_eq!(message, format!("Value fresh for parameter ReceiveRequestAttemptId is invalid. Reason: {SPENT}"));
}

async fn a_retry_resets_the_visibility_timeout_to_its_own(e: Endpoint) {
    let queue = e.fifo("events.fifo").await;
    e.send(&queue, "g", "m").await;
    let first = e.receive(&queue, "A", 1, VISIBILITY).await.unwrap();
    assert!(e.receive(&queue, "B", 1, VISIBILITY).await.unwrap().is_empty(), "hidden for A");
    // The retry's VisibilityTimeout of 0 makes the message visible at once.
    assert_eq!(e.receive(&queue, "A", 1, 0).await.unwrap(), first);
    let next = e.receive(&queue, "C", 1, VISIBILITY).await.unwrap();
    assert_eq!((bodies(&next), next[0].2.as_str()), (vec!["m"], "2"), "received again");
    // A's messages are C's now: A is spent.
    assert_eq!(refusal(e.receive(&queue, "A", 1, VISIBILITY).await).0, 400);
}

async fn an_invalid_attempt_id_is_a_400_naming_the_parameter(e: Endpoint) {
    let queue = e.fifo("events.fifo").await;
    e.send(&queue, "g", "m").await;
    for bad in ["a".repeat(129), "has space".to_owned(), "naïve".to_owned(), String::new()] {
        let (status, header, message) = refusal(e.receive(&queue, &bad, 1, VISIBILITY).await);
        assert_eq!((status, header.as_str()), (400, "InvalidParameterValue;Sender"), "{bad:?}");
        assert!(message.contains("for parameter ReceiveRequestAttemptId is invalid"), "{bad:?}: {message}");
    }
    // The longest, of every character SQS allows, is taken.
    let allowed: String = (b'!'..=b'~').map(char::from).cycle().take(128).collect();
    assert_eq!(bodies(&e.receive(&queue, &allowed, 1, VISIBILITY).await.unwrap()), ["m"]);
}

async fn a_standard_queue_ignores_the_attempt_id(e: Endpoint) {
    let created = e.client.create_queue().queue_name("flush").send().await.expect("CreateQueue");
    let queue = created.queue_url().unwrap().to_owned();
    e.client.send_message().queue_url(&queue).message_body("m").send().await.expect("SendMessage");
    // Not even checked, and no retry: the message is in flight, unseen.
    assert_eq!(bodies(&e.receive(&queue, "not valid", 1, VISIBILITY).await.unwrap()), ["m"]);
    assert!(e.receive(&queue, "not valid", 1, VISIBILITY).await.unwrap().is_empty());
}

/// Each case on both stores; the Redis one on the server `TestRedis::new`
/// picks, and the first case on a cluster too (every key of the receive
/// script in one slot).
macro_rules! on_both {
    ($($case:ident),* $(,)?) => {
        mod on_memory {
            $(#[tokio::test] async fn $case() { super::$case(super::memory().await).await })*
        }
        mod on_redis {
            use sluice_testkit::TestRedis;
            $(#[tokio::test] async fn $case() {
                super::$case(super::in_redis(TestRedis::new(concat!("receive_attempt::", stringify!($case)))).await).await
            })*
        }
    };
}

on_both!(
    the_same_attempt_again_answers_the_same_messages_and_receipts,
    a_retry_after_a_delete_or_a_visibility_change_is_refused_as_sqs_refuses_it,
    a_retry_resets_the_visibility_timeout_to_its_own,
    an_invalid_attempt_id_is_a_400_naming_the_parameter,
    a_standard_queue_ignores_the_attempt_id,
);

#[tokio::test]
async fn on_a_cluster_the_attempt_keys_share_the_queue_s_slot() {
    let redis = TestRedis::cluster("receive_attempt::cluster");
    the_same_attempt_again_answers_the_same_messages_and_receipts(in_redis(redis).await).await;
}
