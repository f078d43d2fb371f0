//! The flush Lambda's handler, called as the runtime calls it with an SQS
//! event, against a real Redis.

use sluice_lambda_harness as harness;

use aws_lambda_events::sqs::SqsEvent;
use harness::Harness;
use lambda_runtime::LambdaEvent;
use serde_json::json;
use sluice_fn_flush_sheet::handler;

fn sqs_event(records: &[(&str, &str)]) -> LambdaEvent<SqsEvent> {
    harness::sqs_event("sluice-flush", records)
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
