//! `POST /sheets/rows` over real HTTP, with a real Redis and the embedded
//! queue: a good row is enqueued in its sheet's group with its log; a bad
//! one is answered 400 naming the field, enqueues nothing and leaves only
//! its log entry; a queue that does not take the row is a 503 the sender
//! retries.

use crate::support;

use reqwest::StatusCode;
use serde_json::{Value, json};
use sluice_domain::WorkItem;
use support::{FORM_KEY, Harness, KEY, Mode};

fn row(row_id: &str) -> Value {
    json!({
        "credential_id": "cred-1", "spreadsheet_id": "1Sheet_id", "sheet_id": 0,
        "submission_id": "sub-1", "row_id": row_id, "header": ["name", "score"], "values": ["ada", 42]
    })
}

#[tokio::test]
async fn a_row_is_enqueued_in_its_sheets_group_with_its_log() {
    let h = Harness::start("row_ok").await;
    let (status, answer) = h.post_row(&row("row-1"), Some(KEY)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    assert_eq!(answer, json!({"event_ids": ["r:cred-1:1Sheet_id:0:sub-1:row-1"], "status": "enqueued"}));
    let messages = h.drain().await;
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].group.as_str(), "gr:cred-1:1Sheet_id:0");
    assert_eq!(messages[0].dedup.as_str(), "r:cred-1:1Sheet_id:0:sub-1:row-1");
    let WorkItem::SheetRow(work) = WorkItem::from_body(&messages[0].body).unwrap() else { panic!("not a row") };
    assert_eq!(work.row.values, vec![json!("ada"), json!(42)]);
    assert_eq!(h.stages("row:cred-1:row-1").await, ["INIT", "ENQUEUED"]);
    // `sluice status` sees it waiting in its sheet's group, and whose it is.
    let (lagging, waiting) = h.ledger().await.lagging(10).await.unwrap();
    assert_eq!(waiting, 1);
    assert_eq!((lagging[0].group.as_str(), lagging[0].pending), ("gr:cred-1:1Sheet_id:0", 1));
    let about: sluice_domain::GroupAbout = serde_json::from_str(lagging[0].about.as_deref().unwrap()).unwrap();
    assert_eq!(
        about,
        sluice_domain::GroupAbout::Sheet {
            credential_id: "cred-1".into(),
            spreadsheet_id: "1Sheet_id".into(),
            sheet_gid: 0
        }
    );
}

#[tokio::test]
async fn a_bad_row_is_a_400_naming_the_field_and_enqueues_nothing() {
    let h = Harness::start("row_bad").await;
    let mut bad = row("row-2");
    bad["sheet_id"] = json!("Sheet1");
    let (status, answer) = h.post_row(&bad, Some(KEY)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(answer["error"]["field"], "sheet_id", "{answer}");
    assert_eq!(h.visible().await, 0);
    // Only the row's log says what happened.
    assert_eq!(h.stages("row:cred-1:row-2").await, ["VALIDATION_FAILED"]);
    assert_eq!(h.redis.keys().await.len(), 1, "{:?}", h.redis.keys().await);
    // A row without a usable id has nowhere to be logged: nothing is written.
    let mut no_id = row("");
    no_id["values"] = json!("x");
    let (status, answer) = h.post_row(&no_id, Some(KEY)).await;
    assert_eq!((status, &answer["error"]["field"]), (StatusCode::BAD_REQUEST, &json!("values")));
    assert_eq!(h.redis.keys().await.len(), 1);
    // The key is checked first, for rows as for webhooks.
    let (status, answer) = h.post_row(&row("row-3"), Some("wrong")).await;
    assert_eq!((status, &answer["error"]["code"]), (StatusCode::UNAUTHORIZED, &json!("unauthorized")));
    assert!(h.stages("row:cred-1:row-3").await.is_empty());
}

#[tokio::test]
async fn a_key_writes_only_where_it_was_given_and_a_webhook_key_writes_no_rows() {
    let h = Harness::start("row_scoped").await;
    // The key Cafe24 sends with every webhook is no key for rows.
    let hook_only = sluice_ingest::ApiKeys::from_list(&sluice_cafe24::Secret::new(KEY)).unwrap();
    assert!(hook_only.verify(Some(KEY.as_bytes())).unwrap().sheets.is_none());
    // A form key: its own credential and spreadsheet, nothing else.
    let (status, answer) = h.post_row(&row("row-5"), Some(FORM_KEY)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    for (field, other) in [("credential_id", "cred-2"), ("spreadsheet_id", "2Other_sheet")] {
        let mut elsewhere = row(&format!("row-{field}"));
        elsewhere[field] = json!(other);
        let (status, answer) = h.post_row(&elsewhere, Some(FORM_KEY)).await;
        assert_eq!((status, &answer["error"]["code"]), (StatusCode::FORBIDDEN, &json!("forbidden")), "{answer}");
        assert_eq!(answer["error"]["field"], field, "{answer}");
        // Nothing enqueued, nothing written into the owner's row log.
        for credential in ["cred-1", "cred-2"] {
            assert!(h.stages(&format!("row:{credential}:row-{field}")).await.is_empty());
        }
    }
    // Nor may a form key post webhooks.
    let webhook = json!({"event_no": 90001, "resource": {"mall_id": "acme", "product_no": 7}});
    let (status, answer) = h.post(webhook.to_string(), Some(FORM_KEY), Some("trace-scoped")).await;
    assert_eq!((status, &answer["error"]["code"]), (StatusCode::FORBIDDEN, &json!("forbidden")), "{answer}");
    assert_eq!(h.drain().await.len(), 1, "only the allowed row was enqueued");
    assert_eq!(h.ingest.snapshot().rejected[sluice_ingest::ErrorCode::Forbidden], 3);
}

#[tokio::test]
async fn a_row_the_queue_does_not_take_is_a_503_and_logged_failed() {
    let h = Harness::start("row_queue_down").await;
    h.queue.control.set(Mode::Unavailable);
    let (status, answer) = h.post_row(&row("row-4"), Some(KEY)).await;
    assert_eq!((status, &answer["error"]["code"]), (StatusCode::SERVICE_UNAVAILABLE, &json!("queue_unavailable")));
    assert_eq!(h.stages("row:cred-1:row-4").await, ["INIT", "FAILED"]);
    assert_eq!(h.ledger().await.lagging(10).await.unwrap().1, 0, "a row the queue did not take is not waiting");
    h.queue.control.set(Mode::Accept);
    let (status, _) = h.post_row(&row("row-4"), Some(KEY)).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_eq!(h.stages("row:cred-1:row-4").await, ["INIT", "FAILED", "INIT", "ENQUEUED"]);
    assert_eq!(h.visible().await, 1);
}

/// Flow control per sheet at ingest: past `sheet_flow.max_queued` rows in
/// the queue, a sheet's rows go to its overflow (`deferred`, logged
/// OVERFLOW), not sent; an overflowed row sent again is a duplicate; a row whose
/// send failed stops counting; another sheet is not held back.
#[tokio::test]
async fn past_the_threshold_a_sheets_rows_are_held_not_enqueued() {
    let h = Harness::start_with("row_flow", |c| c.sheet_flow.max_queued = 2).await;
    let status_of = |answer: &Value| answer["status"].as_str().unwrap_or_default().to_owned();
    let mut statuses = Vec::new();
    for id in ["f-1", "f-2", "f-3", "f-4"] {
        let (status, answer) = h.post_row(&row(id), Some(KEY)).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
        statuses.push(status_of(&answer));
    }
    assert_eq!(statuses, ["enqueued", "enqueued", "deferred", "deferred"]);
    assert_eq!(h.stages("row:cred-1:f-3").await, ["INIT", "OVERFLOW"]);
    let overflow = h.trace("row:cred-1:f-4").await.pop().unwrap();
    assert_eq!(overflow.detail, json!({"sheet": "gr:cred-1:1Sheet_id:0", "overflow_len": 2}));
    // An overflowed row sent again is a duplicate; a queued one is sent again,
    // keeping its place (the queue drops the copy).
    let (_, again) = h.post_row(&row("f-3"), Some(KEY)).await;
    assert_eq!(status_of(&again), "duplicate");
    let (_, again) = h.post_row(&row("f-1"), Some(KEY)).await;
    assert_eq!(status_of(&again), "enqueued");
    assert_eq!(h.ingest.snapshot().deferred, 2);
    // Another sheet is not held back by this one.
    let mut other = row("o-1");
    other["sheet_id"] = json!(7);
    let (_, answer) = h.post_row(&other, Some(KEY)).await;
    assert_eq!(status_of(&answer), "enqueued");
    let ids: Vec<String> =
        h.drain().await.iter().map(|m| m.dedup.as_str().rsplit(':').next().unwrap().to_owned()).collect();
    assert_eq!(ids, ["f-1", "f-2", "o-1"], "overflowed rows are not in the queue");
}

#[tokio::test]
async fn a_row_whose_send_failed_no_longer_holds_the_sheet_back() {
    let h = Harness::start_with("row_flow_failed", |c| c.sheet_flow.max_queued = 1).await;
    h.queue.control.set(Mode::Unavailable);
    let (status, _) = h.post_row(&row("g-1"), Some(KEY)).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    h.queue.control.set(Mode::Accept);
    let (_, answer) = h.post_row(&row("g-2"), Some(KEY)).await;
    assert_eq!(answer["status"], "enqueued", "g-1's failed send still counted: {answer}");
}

#[tokio::test]
async fn an_id_holding_chat_markup_is_a_400_naming_the_field() {
    let h = Harness::start("row_markup").await;
    for (field, id) in
        [("credential_id", "x`<https://evil.example|Sign in>`"), ("row_id", "r|1"), ("submission_id", "s<1>")]
    {
        let mut bad = row("row-markup");
        bad[field] = json!(id);
        let (status, answer) = h.post_row(&bad, Some(KEY)).await;
        assert_eq!((status, &answer["error"]["field"]), (StatusCode::BAD_REQUEST, &json!(field)), "{answer}");
    }
    assert_eq!(h.visible().await, 0);
}
