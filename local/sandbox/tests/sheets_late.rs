//! `SheetsFault::AppliedLate` over real HTTP: a write whose client gave up
//! before it was applied, applied afterwards, where it lands at that
//! moment. The tests wait on the sandbox's late-call counts and release
//! the held write themselves, so nothing depends on how long a step takes.

use crate::sheets_support;

use reqwest::Method;
use serde_json::{Value, json};
use sheets_support::{FIRST_GID, Fixture, SPREADSHEET, bounded};
use sluice_sandbox::sheets::{LateCalls, RecordedFault};
use sluice_sandbox::{SheetsFault, SheetsOp};
use std::time::{Duration, Instant};

fn held(f: &Fixture) -> Value {
    json!(f.sandbox.sheet_values(SPREADSHEET, FIRST_GID).expect("Sheet1 exists"))
}

/// `values.append` of `rows` to Sheet1 by a client that gives up after
/// `timeout`: the answer's status and body, or the client's error.
async fn append_within(f: &Fixture, timeout: Duration, rows: Value) -> Result<(u16, Value), reqwest::Error> {
    let client = sluice_http::builder().timeout(timeout).build().unwrap();
    let url = format!("{}:append?valueInputOption=RAW&insertDataOption=INSERT_ROWS", f.values_url("Sheet1"));
    let response = client.post(url).bearer_auth(&f.access_token).json(&json!({ "values": rows })).send().await?;
    Ok((response.status().as_u16(), response.json().await?))
}

#[tokio::test]
async fn a_timed_out_append_applied_late_lands_after_the_rows_appended_meanwhile() {
    bounded(async {
        let f = Fixture::with_defaults().await;
        f.append(&f.access_token, "Sheet1", "RAW", json!([["first"]])).await;
        let hold = Duration::from_secs(30);
        f.sandbox.inject(SheetsFault::AppliedLate { op: SheetsOp::ValuesAppend, hold, apply_after: None });

        let (timed_out, arrived) = tokio::join!(
            append_within(&f, Duration::from_millis(500), json!([["late"]])),
            f.sandbox.wait_late(|c| c.arrived >= 1),
        );
        let error = timed_out.expect_err("the client gives up");
        assert!(error.is_timeout(), "{error:?}");
        assert_eq!(arrived, LateCalls { arrived: 1, applied: 0 });
        assert_eq!(held(&f), json!([["first"]]), "not applied when the client gave up");
        let late = f.sandbox.calls().into_iter().find(|c| c.fault == Some(RecordedFault::AppliedLate)).unwrap();
        assert_eq!((late.status, late.applied, late.counted), (0, false, true));

        // Someone else appends meanwhile (the client's retry, say).
        let meanwhile = f.append(&f.access_token, "Sheet1", "RAW", json!([["meanwhile"]])).await;
        assert_eq!(meanwhile.body["updates"]["updatedRange"], "Sheet1!A2");

        assert_eq!(f.sandbox.release_late(), 1);
        assert_eq!(f.sandbox.late_calls(), LateCalls { arrived: 1, applied: 1 });
        assert_eq!(held(&f), json!([["first"], ["meanwhile"], ["late"]]), "at the end, as of when it was applied");
        let amended = f.sandbox.calls().into_iter().find(|c| c.seq == late.seq).unwrap();
        assert_eq!((amended.status, amended.applied, amended.rows, amended.at), (200, true, 1, late.at));
        assert_eq!(f.sandbox.release_late(), 0, "nothing left to apply");
        // The next append is not held.
        assert_eq!(f.append(&f.access_token, "Sheet1", "RAW", json!([["next"]])).await.status, 200);
    })
    .await;
}

#[tokio::test]
async fn a_late_write_is_answered_only_once_its_timer_has_applied_it() {
    bounded(async {
        let f = Fixture::with_defaults().await;
        let apply_after = Duration::from_millis(300);
        let fault = SheetsFault::AppliedLate {
            op: SheetsOp::ValuesAppend,
            hold: Duration::ZERO,
            apply_after: Some(apply_after),
        };
        f.sandbox.inject(fault);
        let started = Instant::now();
        let (status, body) = append_within(&f, Duration::from_secs(15), json!([["timed"]])).await.unwrap();
        // Google reports a write only once done: no answer before the rows land.
        assert!(started.elapsed() >= apply_after, "answered before it was applied");
        assert_eq!((status, &body["updates"]["updatedRange"]), (200, &json!("Sheet1!A1")));
        assert_eq!(f.sandbox.wait_late(|c| c.applied >= 1).await, LateCalls { arrived: 1, applied: 1 });
        assert_eq!(held(&f), json!([["timed"]]));
    })
    .await;
}

#[tokio::test]
async fn the_control_plane_holds_a_batch_update_and_releases_it_onto_the_sheet_as_it_then_is() {
    bounded(async {
        let f = Fixture::with_defaults().await;
        f.append(&f.access_token, "Sheet1", "RAW", json!([["a"], ["b"]])).await;
        let fault = json!({"applied_late": {"op": "batch_update", "hold": 0}});
        assert_eq!(f.control(Method::POST, "/faults", Some(fault)).await.status, 200);
        let read_fault = json!({"applied_late": {"op": "values_get", "hold": 0}});
        assert_eq!(f.control(Method::POST, "/faults", Some(read_fault)).await.status, 400, "only writes");

        // Delete the first row, late.
        let range = json!({"sheetId": 0, "dimension": "ROWS", "startIndex": 0, "endIndex": 1});
        let delete = f.batch_update(&f.access_token, json!({"requests": [{"deleteDimension": {"range": range}}]}));
        let meanwhile = async {
            f.sandbox.wait_late(|c| c.arrived >= 1).await;
            let counts = f.control(Method::GET, "/late", None).await;
            assert_eq!(counts.body, json!({"arrived": 1, "applied": 0}));
            // A person sorts the rows the other way before the deletion
            // is applied.
            f.sandbox.sort_rows(SPREADSHEET, FIRST_GID, 0..2, 0, true).unwrap();
            assert_eq!(held(&f), json!([["b"], ["a"]]));
            f.control(Method::POST, "/late/release", None).await
        };
        let (deleted, released) = tokio::join!(delete, meanwhile);
        assert_eq!(released.body, json!({"released": 1}));
        assert_eq!(deleted.status, 200, "{:?}", deleted.body);
        assert_eq!(deleted.body["replies"], json!([{}]));
        assert_eq!(held(&f), json!([["a"]]), "the row first when it was applied went");
    })
    .await;
}
