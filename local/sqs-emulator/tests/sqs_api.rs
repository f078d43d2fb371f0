//! The SQS endpoint's wire format, through the real `aws-sdk-sqs` client:
//! SQS's error shapes and codes (typed SDK errors must match), checksums,
//! and the refusals of what the embedded queue does not implement.

use aws_sdk_sqs::Client;
use aws_sdk_sqs::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_sqs::types::{QueueAttributeName, SendMessageBatchRequestEntry};
use md5::{Digest, Md5};
use sluice_aws::{SqsEndpoint, sqs_client};
use sluice_sqs_emulator::MemoryBackend;
use sluice_sqs_emulator::sqs_api::{self, SqsApi};

async fn endpoint() -> (Client, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let api = SqsApi::new(MemoryBackend::new(), &url);
    tokio::spawn(async move { sqs_api::serve(listener, api, std::future::pending()).await.unwrap() });
    let client = sqs_client(&SqsEndpoint::Local(url)).await;
    let queue = client
        .create_queue()
        .queue_name("q.fifo")
        .attributes(QueueAttributeName::FifoQueue, "true")
        .send()
        .await
        .expect("CreateQueue")
        .queue_url()
        .unwrap()
        .to_owned();
    (client, queue)
}

/// The raw HTTP answer behind an SDK error: status, x-amzn-query-error, body.
fn raw<E>(err: &SdkError<E, aws_sdk_sqs::config::http::HttpResponse>) -> (u16, String, serde_json::Value)
where
    E: std::fmt::Debug,
{
    let response = err.raw_response().unwrap_or_else(|| panic!("no HTTP response: {err:?}"));
    let header = response.headers().get("x-amzn-query-error").unwrap_or_default().to_owned();
    let body = serde_json::from_slice(response.body().bytes().unwrap_or_default()).expect("a JSON error body");
    (response.status().as_u16(), header, body)
}

#[tokio::test]
async fn a_missing_queue_is_sqs_s_queue_does_not_exist_typed_and_on_the_wire() {
    let (client, _) = endpoint().await;
    let err = client.get_queue_url().queue_name("nope.fifo").send().await.unwrap_err();
    let (status, header, body) = raw(&err);
    assert_eq!(status, 400);
    assert_eq!(header, "AWS.SimpleQueueService.NonExistentQueue;Sender");
    assert_eq!(body["__type"], "com.amazonaws.sqs#QueueDoesNotExist");
    assert_eq!(body["message"], "The specified queue does not exist.");
    assert!(err.into_service_error().is_queue_does_not_exist());
}

#[tokio::test]
async fn batch_rules_are_answered_with_sqs_s_batch_errors() {
    let (client, queue) = endpoint().await;
    let entry = |id: &str| {
        SendMessageBatchRequestEntry::builder()
            .id(id)
            .message_body("b")
            .message_group_id("g")
            .message_deduplication_id(id)
            .build()
            .unwrap()
    };
    let eleven: Vec<_> = (0..11).map(|i| entry(&i.to_string())).collect();
    let err = client.send_message_batch().queue_url(&queue).set_entries(Some(eleven)).send().await.unwrap_err();
    assert!(err.into_service_error().is_too_many_entries_in_batch_request());
    let twice = vec![entry("a"), entry("a")];
    let err = client.send_message_batch().queue_url(&queue).set_entries(Some(twice)).send().await.unwrap_err();
    assert!(err.into_service_error().is_batch_entry_ids_not_distinct());
    let err = client.send_message_batch().queue_url(&queue).set_entries(Some(vec![])).send().await.unwrap_err();
    assert!(err.into_service_error().is_empty_batch_request());
}

#[tokio::test]
async fn bad_entries_fail_alone_and_good_ones_are_sent_with_their_md5() {
    let (client, queue) = endpoint().await;
    let good = SendMessageBatchRequestEntry::builder()
        .id("good")
        .message_body("héllo")
        .message_group_id("g")
        .message_deduplication_id("d1")
        .build()
        .unwrap();
    let no_group = SendMessageBatchRequestEntry::builder().id("nogroup").message_body("x").build().unwrap();
    let control = SendMessageBatchRequestEntry::builder()
        .id("control")
        .message_body("bell\u{7}")
        .message_group_id("g")
        .message_deduplication_id("d2")
        .build()
        .unwrap();
    let out = client
        .send_message_batch()
        .queue_url(&queue)
        .set_entries(Some(vec![good, no_group, control]))
        .send()
        .await
        .expect("SendMessageBatch");
    assert_eq!(out.successful().len(), 1);
    let ok = &out.successful()[0];
    assert_eq!(ok.id(), "good");
    assert_eq!(ok.md5_of_message_body(), hex::encode(Md5::digest("héllo".as_bytes())));
    assert!(ok.sequence_number().is_some());
    let failed: Vec<(&str, &str, bool)> = out.failed().iter().map(|f| (f.id(), f.code(), f.sender_fault())).collect();
    assert_eq!(failed, [("nogroup", "MissingParameter", true), ("control", "InvalidMessageContents", true)]);
}

#[tokio::test]
async fn out_of_range_parameters_name_the_parameter() {
    let (client, queue) = endpoint().await;
    let err = client.receive_message().queue_url(&queue).max_number_of_messages(11).send().await.unwrap_err();
    let (status, header, body) = raw(&err);
    assert_eq!((status, header.as_str()), (400, "InvalidParameterValue;Sender"));
    assert!(body["message"].as_str().unwrap().contains("MaxNumberOfMessages"), "{body}");
    let err = client.receive_message().queue_url(&queue).wait_time_seconds(21).send().await.unwrap_err();
    assert_eq!(err.code(), Some("InvalidParameterValue"));
    assert!(err.message().unwrap().contains("WaitTimeSeconds"));
}

/// One raw request's answer: status and body (the endpoint closes or
/// answers with a length; a request here never asks to keep alive).
async fn raw_exchange(url: &str, request: Vec<u8>) -> (u16, serde_json::Value) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(url.trim_start_matches("http://")).await.unwrap();
    // The server may answer before it has read it all.
    let _ = stream.write_all(&request).await;
    let mut received = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        if let Some(end) = received.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&received[..end]).to_ascii_lowercase();
            let length: usize = head.lines().find_map(|l| l.strip_prefix("content-length: ")).unwrap().parse().unwrap();
            if received.len() >= end + 4 + length {
                let body = &received[end + 4..end + 4 + length];
                let json = serde_json::from_slice(body).unwrap_or_else(|e| panic!("{e}: {head}"));
                return (head[9..12].parse().unwrap(), json);
            }
        }
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "closed before an answer: {:?}", String::from_utf8_lossy(&received));
        received.extend_from_slice(&chunk[..n]);
    }
}

#[tokio::test]
async fn bodies_that_cannot_be_read_get_sqs_json_errors() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let api = SqsApi::new(MemoryBackend::new(), &url);
    tokio::spawn(async move { sqs_api::serve(listener, api, std::future::pending()).await.unwrap() });
    let head = "POST / HTTP/1.1\r\nhost: sqs\r\nx-amz-target: AmazonSQS.SendMessage\r\n";

    let too_large = sqs_api::MAX_REQUEST_BYTES + 1;
    let mut request = format!("{head}content-length: {too_large}\r\n\r\n").into_bytes();
    request.resize(request.len() + too_large, b'x');
    let (status, body) = raw_exchange(&url, request).await;
    assert_eq!(status, 413, "{body}");
    assert_eq!(body["__type"], "com.amazon.coral.service#RequestEntityTooLargeException");
    assert!(body["message"].as_str().unwrap().contains(&sqs_api::MAX_REQUEST_BYTES.to_string()), "{body}");

    let broken = format!("{head}transfer-encoding: chunked\r\n\r\nzz\r\n{{}}\r\n0\r\n\r\n");
    let (status, body) = raw_exchange(&url, broken.into_bytes()).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["__type"], "com.amazon.coral.service#SerializationException");
    assert!(body["message"].as_str().unwrap().contains("could not be read"), "{body}");
}

#[tokio::test]
async fn receipts_that_are_not_ours_are_receipt_handle_is_invalid() {
    let (client, queue) = endpoint().await;
    let err = client.delete_message().queue_url(&queue).receipt_handle("garbage").send().await.unwrap_err();
    assert_eq!(raw(&err).0, 404);
    assert!(err.into_service_error().is_receipt_handle_is_invalid());
}

#[tokio::test]
async fn what_the_embedded_queue_lacks_is_refused_by_name() {
    let (client, queue) = endpoint().await;
    let err = client
        .create_queue()
        .queue_name("r.fifo")
        .attributes(QueueAttributeName::FifoQueue, "true")
        .attributes(QueueAttributeName::MessageRetentionPeriod, "60")
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some("InvalidAttributeName"));
    assert!(err.message().unwrap().contains("MessageRetentionPeriod"));

    let err = client
        .send_message()
        .queue_url(&queue)
        .message_body("b")
        .message_group_id("g")
        .message_deduplication_id("d")
        .delay_seconds(5)
        .send()
        .await
        .unwrap_err();
    assert!(err.message().unwrap().contains("DelaySeconds"), "{err:?}");

    let err =
        client.set_queue_attributes().queue_url(&queue).attributes(QueueAttributeName::DelaySeconds, "1").send().await;
    let err = err.unwrap_err();
    assert_eq!(err.code(), Some("AWS.SimpleQueueService.UnsupportedOperation"));
    assert!(err.message().unwrap().contains("SetQueueAttributes"));
}

#[tokio::test]
async fn create_queue_is_idempotent_only_with_the_same_attributes() {
    let (client, queue) = endpoint().await;
    let again = client
        .create_queue()
        .queue_name("q.fifo")
        .attributes(QueueAttributeName::FifoQueue, "true")
        .send()
        .await
        .expect("same attributes");
    assert_eq!(again.queue_url(), Some(queue.as_str()));
    let err = client
        .create_queue()
        .queue_name("q.fifo")
        .attributes(QueueAttributeName::FifoQueue, "true")
        .attributes(QueueAttributeName::VisibilityTimeout, "5")
        .send()
        .await
        .unwrap_err();
    assert!(err.message().unwrap().contains("VisibilityTimeout"));
    assert!(err.into_service_error().is_queue_name_exists());
}

#[tokio::test]
async fn content_based_deduplication_uses_the_body() {
    let (client, _) = endpoint().await;
    let queue = client
        .create_queue()
        .queue_name("cbd.fifo")
        .attributes(QueueAttributeName::FifoQueue, "true")
        .attributes(QueueAttributeName::ContentBasedDeduplication, "true")
        .send()
        .await
        .unwrap()
        .queue_url()
        .unwrap()
        .to_owned();
    let send =
        |body: &'static str| client.send_message().queue_url(&queue).message_body(body).message_group_id("g").send();
    let first = send("same").await.unwrap();
    let second = send("same").await.unwrap();
    assert_eq!(first.message_id(), second.message_id(), "the duplicate gets the first message's answer");
    send("other").await.unwrap();
    let got = client.receive_message().queue_url(&queue).max_number_of_messages(10).send().await.unwrap();
    let bodies: Vec<&str> = got.messages().iter().filter_map(|m| m.body()).collect();
    assert_eq!(bodies, ["same", "other"]);
}

#[tokio::test]
async fn list_queues_filters_by_prefix_and_pages() {
    let (client, _) = endpoint().await;
    for name in ["a1.fifo", "a2.fifo", "b.fifo"] {
        client.create_queue().queue_name(name).attributes(QueueAttributeName::FifoQueue, "true").send().await.unwrap();
    }
    let page = client.list_queues().queue_name_prefix("a").max_results(1).send().await.unwrap();
    assert_eq!(page.queue_urls().len(), 1);
    assert!(page.queue_urls()[0].ends_with("/000000000000/a1.fifo"));
    let next = client
        .list_queues()
        .queue_name_prefix("a")
        .max_results(1)
        .next_token(page.next_token().unwrap())
        .send()
        .await
        .unwrap();
    assert!(next.queue_urls()[0].ends_with("/a2.fifo") && next.next_token().is_none(), "{next:?}");
}
