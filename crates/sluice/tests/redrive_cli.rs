//! `sluice redrive` against a real `sluice dev` (its SQS and Step Functions
//! endpoints, a sandbox Cafe24): dead-lettered messages of one group run through
//! the state machine in order, each deleted only once its execution
//! succeeded, stopping at the first that fails; other groups' messages are
//! left where they were; each execution ARN is printed. Bad flags exit 2.

use crate::support;

use aws_sdk_sqs::types::QueueAttributeName;
use serde_json::{Value, json};
use sluice_aws::{SqsEndpoint, sqs_client};
use sluice_domain::{ResourceKind, ResourceRef, ShopEvent, ShopWork, Topic};
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;
use support::Dev;

const EXECUTION_ARN: &str = "arn:aws:states:us-east-1:000000000000:execution:sluice-dev-pipeline:";

fn redrive(workdir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
        .arg("redrive")
        .args(args)
        .current_dir(workdir)
        .env_remove("SLUICE_EVENTS_DLQ_URL")
        .env_remove("SLUICE_STATE_MACHINE_ARN")
        .env_remove("SLUICE_SQS_ENDPOINT")
        .env_remove("SLUICE_SFN_ENDPOINT")
        .output()
        .expect("run sluice redrive")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Dead-letters `body` (sends it to the dead-letter queue) under `group`: (message id).
async fn dead_letter(sqs: &aws_sdk_sqs::Client, dlq: &str, group: &str, dedup: &str, body: &str) -> String {
    let sent = sqs.send_message().queue_url(dlq).message_body(body).message_group_id(group);
    let sent = sent.message_deduplication_id(dedup).send().await.expect("SendMessage to the DLQ");
    sent.message_id().expect("message id").to_owned()
}

/// A product update event of mall `acme`, as ingest would have queued it.
fn product_event(product: &str, event_no: u32, trace_id: &str) -> ShopWork {
    let resource = ResourceRef { kind: ResourceKind::Product, id: product.to_owned() };
    let event = ShopEvent::new("acme", Topic(event_no), resource, trace_id).expect("event");
    ShopWork::new(event, sluice_testkit::now_ms())
}

/// (visible, in flight) messages in `queue`.
async fn depth(sqs: &aws_sdk_sqs::Client, queue: &str) -> (String, String) {
    let names =
        [QueueAttributeName::ApproximateNumberOfMessages, QueueAttributeName::ApproximateNumberOfMessagesNotVisible];
    let answer = sqs.get_queue_attributes().queue_url(queue).set_attribute_names(Some(names.to_vec())).send().await;
    let attributes = answer.expect("GetQueueAttributes").attributes().cloned().unwrap_or_default();
    (attributes[&names[0]].clone(), attributes[&names[1]].clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_groups_dead_lettered_messages_run_in_order_until_the_first_failure() {
    let mut dev = Dev::start(None, &["--sandbox-mall", "acme"]);
    let sandbox = dev.url("Cafe24 sandbox");
    let (sqs_url, dlq) = (dev.url("SQS endpoint"), dev.url("Dead-letter queue"));
    let (sfn_url, machine) = (dev.url("Step Functions endpoint"), dev.url("State machine"));
    assert_eq!(machine, "arn:aws:states:us-east-1:000000000000:stateMachine:sluice-dev-pipeline");
    let change: Value = sluice_http::client()
        .post(format!("{sandbox}/sandbox/malls/acme/resources/products"))
        .json(&json!({"product_name": "sluice mug"}))
        .send()
        .await
        .expect("sandbox")
        .json()
        .await
        .expect("change report");
    let product = change["id"].as_str().expect("id");
    let event_no = change["webhook"]["event_no"].as_u64().expect("event_no") as u32;

    // Group G: a good event, a body that is no work item, a good event;
    // another group's message dead-lettered too.
    let sqs = sqs_client(&SqsEndpoint::Local(sqs_url.clone())).await;
    let (first, second) =
        (product_event(product, event_no, "redrive-1"), product_event(product, event_no, "redrive-2"));
    let group = first.event.group_key().as_str().to_owned();
    let mut ids = Vec::new();
    for (dedup, body) in [
        (first.event_id.clone(), first.to_message().body),
        ("not-work".to_owned(), "not a work item".to_owned()),
        (second.event_id.clone(), second.to_message().body),
    ] {
        ids.push(dead_letter(&sqs, &dlq, &group, &dedup, &body).await);
    }
    dead_letter(&sqs, &dlq, "another-group", "other-1", "{}").await;

    // From the directory of `sluice dev`: its queue and state machine.
    let out = redrive(&dev.workdir, &["--group", &group]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "stopped at the failure: {stdout}{}", text(&out.stderr));
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].starts_with(&format!("redriving group {group} from {dlq} through {machine}")), "{stdout}");
    assert!(lines[1].starts_with(&format!("{}  SUCCEEDED  {EXECUTION_ARN}", ids[0])), "{stdout}");
    // The pipeline reports the bad item failed in a successful execution.
    assert!(lines[2].starts_with(&format!("{}  SUCCEEDED  {EXECUTION_ARN}", ids[1])), "{stdout}");
    assert!(lines[3].contains(&format!("message {}", ids[1])) && lines[3].contains("stay in the dead-letter queue"));
    assert_eq!(lines.len(), 4, "{stdout}");
    dev.trace_once_stored(&first.event_id).await;
    // The failed one, the one after it and the other group's are back, visible.
    assert_eq!(depth(&sqs, &dlq).await, ("3".to_owned(), "0".to_owned()));

    // The bad body taken out by hand, the rest of the group goes through,
    // this time with every target named by flags, from anywhere.
    let held = sqs.receive_message().queue_url(&dlq).max_number_of_messages(10).send().await.expect("receive");
    let bad = held.messages().iter().find(|m| m.message_id() == Some(ids[1].as_str())).expect("the bad message");
    sqs.delete_message().queue_url(&dlq).receipt_handle(bad.receipt_handle().unwrap()).send().await.unwrap();
    for m in held.messages().iter().filter(|m| m.message_id() != Some(ids[1].as_str())) {
        let release = sqs.change_message_visibility().queue_url(&dlq).receipt_handle(m.receipt_handle().unwrap());
        release.visibility_timeout(0).send().await.unwrap();
    }
    let elsewhere = std::env::temp_dir();
    let flags = ["--group", &group, "--dlq-url", &dlq, "--state-machine-arn", &machine];
    let endpoints = ["--sqs-endpoint", sqs_url.as_str(), "--sfn-endpoint", sfn_url.as_str()];
    let out = redrive(&elsewhere, &[&flags[..], &endpoints[..]].concat());
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains(&format!("{}  SUCCEEDED  {EXECUTION_ARN}", ids[2])), "{stdout}");
    assert!(stdout.ends_with(&format!("redrove 1 messages of group {group}\n")), "{stdout}");
    dev.trace_once_stored(&second.event_id).await;
    assert_eq!(depth(&sqs, &dlq).await, ("1".to_owned(), "0".to_owned()), "the other group's message stays");

    let out = redrive(&dev.workdir, &["--group", &group]);
    assert!(out.status.success());
    assert!(text(&out.stdout).contains(&format!("no dead-lettered message of group {group}")), "{}", text(&out.stdout));

    dev.signal("-INT");
    assert!(dev.wait(Duration::from_secs(15)).success());
}

#[test]
fn bad_flags_are_one_line_and_exit_2() {
    let nowhere = std::env::temp_dir();
    for (args, says) in [
        (&[][..], "--group"),
        (
            &[
                "--group",
                "has space",
                "--dlq-url",
                "http://q",
                "--state-machine-arn",
                "arn:aws:states:r:1:stateMachine:m",
            ][..],
            "--group",
        ),
        (
            &["--group", "g", "--dlq-url", "queue", "--state-machine-arn", "arn:aws:states:r:1:stateMachine:m"][..],
            "--dlq-url",
        ),
        (&["--group", "g", "--dlq-url", "http://q", "--state-machine-arn", "pipeline"][..], "--state-machine-arn"),
        (&["--group", "g", "--dlq-url", "http://q"][..], "no state machine"),
    ] {
        let out = redrive(&nowhere, args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        if !args.is_empty() {
            assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        }
    }
}
