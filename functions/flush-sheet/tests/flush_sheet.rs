//! The flush Lambda's handler, called as the runtime calls it with an SQS
//! event, against a real Redis.

use sluice_lambda_harness as harness;

use aws_lambda_events::sqs::SqsEvent;
use harness::Harness;
use lambda_runtime::{Context, LambdaEvent};
use serde_json::json;
use sluice_fn_flush_sheet::handler;

fn sqs_event(records: &[(&str, &str)]) -> LambdaEvent<SqsEvent> {
    let records: Vec<_> = records
        .iter()
        .map(|(id, body)| {
            json!({"messageId": id, "receiptHandle": format!("rh-{id}"), "body": body,
            "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "1773120600000"},
            "messageAttributes": {}, "eventSource": "aws:sqs",
            "eventSourceARN": "arn:aws:sqs:ap-northeast-2:123456789012:sluice-flush", "awsRegion": "ap-northeast-2"})
        })
        .collect();
    LambdaEvent::new(serde_json::from_value(json!({ "Records": records })).unwrap(), Context::default())
}

#[tokio::test]
async fn a_request_for_an_empty_sheet_is_done_and_a_bad_body_is_reported_failed() {
    let h = Harness::start("fn_flush", &[]).await;
    let request = json!({"sheet": "gr:c:s:0", "credential_id": "c", "spreadsheet_id": "s", "sheet_gid": 0,
        "token": "t"})
    .to_string();
    let response = handler(&h.sheet, sqs_event(&[("m1", &request), ("m2", "not a request")])).await.unwrap();
    let failed: Vec<_> = response.batch_item_failures.iter().map(|f| f.item_identifier.clone()).collect();
    assert_eq!(failed, vec!["m2".to_owned()]);
    h.stop().await;
}
