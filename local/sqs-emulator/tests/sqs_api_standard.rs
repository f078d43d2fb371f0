//! The SQS endpoint's standard queues through the real `aws-sdk-sqs`
//! client: CreateQueue with `DelaySeconds`, the attributes and answers SQS
//! gives for a standard queue, and each parameter one kind of queue takes
//! and the other refuses, in SQS's words where SQS has them.

use aws_sdk_sqs::Client;
use aws_sdk_sqs::error::ProvideErrorMetadata;
use aws_sdk_sqs::types::{MessageSystemAttributeName, QueueAttributeName as Attr, SendMessageBatchRequestEntry};
use sluice_aws::{SqsEndpoint, sqs_client};
use sluice_sqs_emulator::MemoryBackend;
use sluice_sqs_emulator::sqs_api::{self, SqsApi};

async fn endpoint() -> Client {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let api = SqsApi::new(MemoryBackend::new(), &url);
    tokio::spawn(async move { sqs_api::serve(listener, api, std::future::pending()).await.unwrap() });
    sqs_client(&SqsEndpoint::Local(url)).await
}

async fn create(client: &Client, name: &str, attributes: &[(Attr, &str)]) -> String {
    let mut request = client.create_queue().queue_name(name);
    for (attr, value) in attributes {
        request = request.attributes(attr.clone(), *value);
    }
    request.send().await.unwrap_or_else(|e| panic!("CreateQueue {name}: {e:?}")).queue_url().unwrap().to_owned()
}

async fn attribute(client: &Client, url: &str, attr: Attr) -> Option<String> {
    let out = client.get_queue_attributes().queue_url(url).attribute_names(Attr::All).send().await.unwrap();
    out.attributes().and_then(|a| a.get(&attr)).cloned()
}

/// SQS's reason for a parameter the queue's kind does not take.
const NOT_FOR_THIS_KIND: &str = "The request include parameter that is not valid for this queue type.";

#[tokio::test]
async fn a_standard_queue_has_its_delay_and_no_fifo_attributes() {
    let client = endpoint().await;
    let url = create(&client, "flush", &[(Attr::DelaySeconds, "5")]).await;
    assert_eq!(attribute(&client, &url, Attr::DelaySeconds).await.as_deref(), Some("5"));
    for fifo_only in [Attr::FifoQueue, Attr::ContentBasedDeduplication, Attr::DeduplicationScope] {
        assert_eq!(attribute(&client, &url, fifo_only.clone()).await, None, "{fifo_only:?}");
    }
    client.send_message().queue_url(&url).message_body("later").send().await.expect("SendMessage");
    assert_eq!(attribute(&client, &url, Attr::ApproximateNumberOfMessagesDelayed).await.as_deref(), Some("1"));
    assert_eq!(attribute(&client, &url, Attr::ApproximateNumberOfMessages).await.as_deref(), Some("0"));

    let err = client.create_queue().queue_name("flush").attributes(Attr::DelaySeconds, "6").send().await.unwrap_err();
    assert!(err.message().unwrap().contains("DelaySeconds"), "{err:?}");
    assert!(err.into_service_error().is_queue_name_exists());
}

#[tokio::test]
async fn a_standard_message_has_no_sequence_number_and_no_group() {
    let client = endpoint().await;
    let url = create(&client, "flush", &[]).await;
    let sent = client.send_message().queue_url(&url).message_body("now").delay_seconds(0).send().await.unwrap();
    assert!(sent.message_id().is_some() && sent.sequence_number().is_none(), "{sent:?}");
    let got = client
        .receive_message()
        .queue_url(&url)
        .message_system_attribute_names(MessageSystemAttributeName::All)
        .send()
        .await
        .unwrap();
    let message = &got.messages()[0];
    assert_eq!((message.body(), message.message_id()), (Some("now"), sent.message_id()));
    let attributes = message.attributes().unwrap();
    assert_eq!(attributes[&MessageSystemAttributeName::ApproximateReceiveCount], "1");
    assert!(attributes.contains_key(&MessageSystemAttributeName::SentTimestamp));
    for fifo_only in [
        MessageSystemAttributeName::MessageGroupId,
        MessageSystemAttributeName::MessageDeduplicationId,
        MessageSystemAttributeName::SequenceNumber,
    ] {
        assert!(!attributes.contains_key(&fifo_only), "{fifo_only:?} on a standard queue's message");
    }
}

#[tokio::test]
async fn a_per_message_delay_on_a_fifo_queue_is_refused_in_sqs_s_words() {
    let client = endpoint().await;
    let url = create(&client, "work.fifo", &[(Attr::FifoQueue, "true")]).await;
    let send = |delay: i32| {
        client
            .send_message()
            .queue_url(&url)
            .message_body("b")
            .message_group_id("g")
            .message_deduplication_id(format!("d{delay}"))
            .delay_seconds(delay)
            .send()
    };
    let err = send(5).await.unwrap_err();
    assert_eq!(err.code(), Some("InvalidParameterValue"));
    assert_eq!(
        err.message(),
        Some(format!("Value 5 for parameter DelaySeconds is invalid. Reason: {NOT_FOR_THIS_KIND}")).as_deref()
    );
    send(0).await.expect("DelaySeconds 0 is no delay, and allowed");
}

#[tokio::test]
async fn fifo_parameters_on_a_standard_queue_are_refused() {
    let client = endpoint().await;
    let url = create(&client, "flush", &[]).await;
    let err =
        client.send_message().queue_url(&url).message_body("b").message_deduplication_id("d").send().await.unwrap_err();
    assert_eq!(err.code(), Some("InvalidParameterValue"));
    let expected = format!("Value d for parameter MessageDeduplicationId is invalid. Reason: {NOT_FOR_THIS_KIND}");
    assert_eq!(err.message(), Some(expected.as_str()));
    let err = client.send_message().queue_url(&url).message_body("b").message_group_id("g").send().await.unwrap_err();
    assert_eq!(err.code(), Some("InvalidParameterValue"));
    assert!(err.message().unwrap().contains("fair queues"), "{err:?}");
    let err = client.send_message().queue_url(&url).message_body("b").delay_seconds(901).send().await.unwrap_err();
    assert_eq!(err.code(), Some("InvalidParameterValue"));
    assert!(err.message().unwrap().contains("DelaySeconds"), "{err:?}");

    // In a batch, each bad entry fails alone and the good one is sent.
    let entry = |id: &str| SendMessageBatchRequestEntry::builder().id(id).message_body(id);
    let entries = vec![
        entry("ok").delay_seconds(1).build().unwrap(),
        entry("grouped").message_group_id("g").build().unwrap(),
        entry("deduped").message_deduplication_id("d").build().unwrap(),
    ];
    let out = client.send_message_batch().queue_url(&url).set_entries(Some(entries)).send().await.unwrap();
    let ok: Vec<(&str, bool)> = out.successful().iter().map(|s| (s.id(), s.sequence_number().is_none())).collect();
    assert_eq!(ok, [("ok", true)]);
    let failed: Vec<(&str, &str, bool)> = out.failed().iter().map(|f| (f.id(), f.code(), f.sender_fault())).collect();
    assert_eq!(failed, [("grouped", "InvalidParameterValue", true), ("deduped", "InvalidParameterValue", true)]);
    assert_eq!(attribute(&client, &url, Attr::ApproximateNumberOfMessagesDelayed).await.as_deref(), Some("1"));
}

#[tokio::test]
async fn creating_a_queue_refuses_what_its_kind_does_not_have() {
    let client = endpoint().await;
    let create_err = |name: &'static str, attr: Attr, value: &'static str| {
        let client = client.clone();
        async move { client.create_queue().queue_name(name).attributes(attr, value).send().await.unwrap_err() }
    };
    let err = create_err("flush", Attr::ContentBasedDeduplication, "true").await;
    assert_eq!(err.code(), Some("InvalidAttributeName"));
    assert!(err.message().unwrap().starts_with("Unknown Attribute ContentBasedDeduplication."), "{err:?}");
    let err = create_err("flush", Attr::FifoQueue, "true").await;
    assert_eq!(err.code(), Some("InvalidParameterValue"));
    assert!(err.message().unwrap().contains("must end with .fifo"), "{err:?}");
    let err = create_err("flush", Attr::DelaySeconds, "901").await;
    assert_eq!(err.code(), Some("InvalidAttributeValue"));
    let err = client
        .create_queue()
        .queue_name("work.fifo")
        .attributes(Attr::FifoQueue, "true")
        .attributes(Attr::DelaySeconds, "5")
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some("InvalidAttributeValue"));
    assert!(err.message().unwrap().contains("DelaySeconds"), "a FIFO queue's queue-wide delay: {err:?}");
    let err = client.create_queue().queue_name("work.fifo").send().await.unwrap_err();
    assert!(err.message().unwrap().contains("FifoQueue=true"), "{err:?}");

    // A standard queue's dead-letter queue is standard.
    let fifo_dlq = create(&client, "dead.fifo", &[(Attr::FifoQueue, "true")]).await;
    let arn = attribute(&client, &fifo_dlq, Attr::QueueArn).await.unwrap();
    let policy = serde_json::json!({ "deadLetterTargetArn": arn, "maxReceiveCount": 3 }).to_string();
    let err = client.create_queue().queue_name("flush").attributes(Attr::RedrivePolicy, policy).send().await;
    let err = err.unwrap_err();
    assert_eq!(err.code(), Some("InvalidParameterValue"));
    assert!(err.message().unwrap().contains("must be standard"), "{err:?}");
}
