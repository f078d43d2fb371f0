//! `sluice dlq` against an SQS endpoint (the embedded queue's, over real
//! HTTP): a message that failed too often is listed, shown without being
//! taken, and redriven back to its queue.

use aws_sdk_sqs::types::QueueAttributeName;
use sluice_aws::{SqsEndpoint, sqs_client};
use sluice_sqs_emulator::sqs_api::{self, SqsApi};
use sluice_sqs_emulator::{QueueBackend, QueueConfig, RedisBackend, RedrivePolicy};
use sluice_testkit::TestRedis;
use std::process::{Command, Output};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

fn sluice(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .env("AWS_ACCESS_KEY_ID", "local")
        .env("AWS_SECRET_ACCESS_KEY", "local")
        .env("AWS_REGION", "us-east-1")
        .env_remove("SLUICE_EVENTS_DLQ_URL")
        .env_remove("SLUICE_FLUSH_DLQ_URL")
        .env_remove("SLUICE_CATCH_UP_DLQ_URL")
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_letter_is_listed_shown_and_redriven() {
    let redis = TestRedis::new("cli_dlq");
    let backend = RedisBackend::new(redis.conn().await, redis.keyspace());
    backend.create_queue("ev-dlq.fifo", &QueueConfig::default()).await.unwrap();
    let redrive = RedrivePolicy { dead_letter_queue: "ev-dlq.fifo".into(), max_receive_count: 1 };
    backend.create_queue("ev.fifo", &QueueConfig { redrive: Some(redrive), ..QueueConfig::default() }).await.unwrap();
    // And a standard queue as the catch-up queue is.
    backend.create_queue("md-dlq", &QueueConfig::default()).await.unwrap();
    let redrive = RedrivePolicy { dead_letter_queue: "md-dlq".into(), max_receive_count: 1 };
    backend.create_queue("md", &QueueConfig { redrive: Some(redrive), ..QueueConfig::default() }).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let api = SqsApi::new(backend, endpoint.clone());
    let (queue_url, dlq_url) = (api.queue_url("ev.fifo"), api.queue_url("ev-dlq.fifo"));
    let (md_url, md_dlq_url) = (api.queue_url("md"), api.queue_url("md-dlq"));
    let stop = CancellationToken::new();
    let server = tokio::spawn(sqs_api::serve(listener, api, stop.clone().cancelled_owned()));

    // One message, received once and never deleted: the next receive moves
    // it to the dead-letter queue.
    let client = sqs_client(&SqsEndpoint::Local(endpoint.clone())).await;
    let send = client.send_message().queue_url(&queue_url).message_body("{\"event\":\"e-1\"}");
    send.message_group_id("g").message_deduplication_id("d-1").send().await.unwrap();
    let got = client.receive_message().queue_url(&queue_url).visibility_timeout(0).send().await.unwrap();
    assert_eq!(got.messages().len(), 1);
    let got = client.receive_message().queue_url(&queue_url).send().await.unwrap();
    assert!(got.messages().is_empty(), "moved to the DLQ on its second receive");

    let flags = ["--events-dlq-url", &dlq_url, "--sqs-endpoint", &endpoint];
    let run = |sub: &str| {
        let args = [&["dlq", sub][..], &flags[..]].concat();
        let out = sluice(&args);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let listed = run("list");
    assert!(listed.starts_with("events          1 waiting"), "{listed}");
    let shown = run("show");
    assert!(shown.contains("{\"event\":\"e-1\"}") && shown.contains("group g"), "{shown}");
    assert!(run("list").starts_with("events          1 waiting"), "show took nothing");
    let redriven = run("redrive");
    assert!(redriven.contains("moved 1 messages back"), "{redriven}");
    assert!(run("list").starts_with("events          0 waiting"));
    let back = client
        .get_queue_attributes()
        .queue_url(&queue_url)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessages);
    let back = back.send().await.unwrap();
    assert_eq!(back.attributes().unwrap()[&QueueAttributeName::ApproximateNumberOfMessages], "1");

    // A "catch up mall M" request that failed too often: the catch-up
    // dead-letter queue is listed, shown and redriven the same way.
    let body = "{\"kind\":\"mall_drain\",\"mall_id\":\"acme\",\"token\":\"t-1\"}";
    client.send_message().queue_url(&md_url).message_body(body).send().await.unwrap();
    let got = client.receive_message().queue_url(&md_url).visibility_timeout(0).send().await.unwrap();
    assert_eq!(got.messages().len(), 1);
    let got = client.receive_message().queue_url(&md_url).send().await.unwrap();
    assert!(got.messages().is_empty(), "moved to the catch-up DLQ on its second receive");
    let both = ["--events-dlq-url", &dlq_url, "--catch-up-dlq-url", &md_dlq_url, "--sqs-endpoint", &endpoint];
    let out = sluice(&[&["dlq", "list"][..], &both[..]].concat());
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(listed.lines().any(|l| l.starts_with("catch-up        1 waiting")), "{listed}");
    // The earlier names of the queue and its flag (before "catch-up") still read.
    let md = ["--queue", "mall-drain", "--mall-drain-dlq-url", &md_dlq_url, "--sqs-endpoint", &endpoint];
    let shown = sluice(&[&["dlq", "show"][..], &md[..]].concat());
    assert!(String::from_utf8_lossy(&shown.stdout).contains("\"mall_id\":\"acme\""), "{shown:?}");
    let redriven = sluice(&[&["dlq", "redrive"][..], &md[..]].concat());
    assert!(String::from_utf8_lossy(&redriven.stdout).contains("moved 1 messages back"), "{redriven:?}");

    let bad = sluice(&["dlq", "show", "--queue", "flush", "--events-dlq-url", &dlq_url]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--flush-dlq-url"));
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(10), server).await.unwrap().unwrap().unwrap();
}
