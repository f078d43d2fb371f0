//! The buffer Lambda's handler, called as the runtime calls it, against a
//! real Redis.

use sluice_lambda_harness as harness;

use harness::{Harness, diagnostic, event};
use serde_json::json;
use sluice_fn_buffer_row::handler;

#[tokio::test]
async fn a_payload_that_is_not_a_sheet_row_is_an_invalid_request() {
    let h = Harness::start("fn_buffer_bad", &[]).await;
    let shop = harness::item("a", "1", "p1");
    let report = diagnostic(handler(&h.sheet, event(json!({ "item": shop }))).await, "Sluice.InvalidRequest");
    assert!(report.error_message.contains("sheet row"), "{report:?}");
    diagnostic(handler(&h.sheet, event(json!({"nope": 1}))).await, "Sluice.InvalidRequest");
    h.stop().await;
}
