//! What people do to a sheet, over real HTTP: `spreadsheets.batchUpdate`'s
//! `deleteDimension`, `insertDimension` and `sortRange` in Google's wire
//! format, its refusals, and the same edits made as a person through the
//! handle and the control plane (no quota, no record).

use crate::sheets_support;

use reqwest::Method;
use serde_json::{Value, json};
use sheets_support::{FIRST_GID, FORM_GID, Fixture, SPREADSHEET, bounded};
use sluice_sandbox::{SheetsFault, SheetsOp, SheetsSandboxConfig, SheetsSandboxError};

/// Sheet1 holding `rows` (RAW, appended as one table from `A1`).
async fn filled(rows: Value) -> Fixture {
    let f = Fixture::with_defaults().await;
    let reply = f.append(&f.access_token, "Sheet1!A1", "RAW", rows).await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    f
}

fn held(f: &Fixture) -> Value {
    json!(f.sandbox.sheet_values(SPREADSHEET, FIRST_GID).expect("Sheet1 exists"))
}

fn rows_range(sheet_id: u64, start: u32, end: u32) -> Value {
    json!({"sheetId": sheet_id, "dimension": "ROWS", "startIndex": start, "endIndex": end})
}

/// Sheet1's `gridProperties.rowCount`.
async fn row_count(f: &Fixture) -> u64 {
    let reply = f.spreadsheet(&f.access_token, SPREADSHEET).await;
    reply.body["sheets"][0]["properties"]["gridProperties"]["rowCount"].as_u64().expect("a row count")
}

#[tokio::test]
async fn delete_dimension_moves_the_rows_below_up_and_the_next_append_follows_the_data() {
    bounded(async {
        let f = filled(json!([["r1"], ["r2"], ["r3"], ["r4"], ["r5"]])).await;
        let before = row_count(&f).await;
        let reply = f
            .batch_update(&f.access_token, json!({"requests": [{"deleteDimension": {"range": rows_range(0, 1, 3)}}]}))
            .await;
        assert_eq!(reply.status, 200, "{:?}", reply.body);
        assert_eq!(reply.body, json!({"spreadsheetId": SPREADSHEET, "replies": [{}]}));
        assert_eq!(held(&f), json!([["r1"], ["r4"], ["r5"]]));
        assert_eq!(row_count(&f).await, before - 2, "the grid shrinks with the rows");
        let reply = f.append(&f.access_token, "Sheet1", "RAW", json!([["r6"]])).await;
        assert_eq!(reply.body["updates"]["updatedRange"], "Sheet1!A4");
        let call = f.sandbox.calls().into_iter().find(|c| c.op == SheetsOp::BatchUpdate).unwrap();
        assert_eq!((call.status, call.applied, call.counted, call.rows, call.range), (200, true, true, 2, None));
    })
    .await;
}

#[tokio::test]
async fn insert_dimension_inserts_blank_rows_that_reads_show_empty() {
    bounded(async {
        let f = filled(json!([["r1", 1], ["r2", 2], ["r3", 3]])).await;
        let request = json!({"insertDimension": {"range": rows_range(0, 1, 3), "inheritFromBefore": true}});
        let reply = f.batch_update(&f.access_token, json!({"requests": [request]})).await;
        assert_eq!(reply.status, 200, "{:?}", reply.body);
        assert_eq!(held(&f), json!([["r1", 1], [], [], ["r2", 2], ["r3", 3]]));
        let read = f.get(&f.access_token, "Sheet1!A1:B", "").await;
        assert_eq!(read.body["values"], json!([["r1", "1"], [], [], ["r2", "2"], ["r3", "3"]]));
        // Columns too: what was in A moves to B.
        let columns = json!({"sheetId": 0, "dimension": "COLUMNS", "startIndex": 0, "endIndex": 1});
        let reply =
            f.batch_update(&f.access_token, json!({"requests": [{"insertDimension": {"range": columns}}]})).await;
        assert_eq!(reply.status, 200, "{:?}", reply.body);
        assert_eq!(held(&f)[0], json!([null, "r1", 1]));
    })
    .await;
}

#[tokio::test]
async fn sort_range_orders_its_rows_by_the_column_and_leaves_the_rest_alone() {
    bounded(async {
        let rows = json!([
            ["name", "qty", "note", "outside"],
            ["pear", 3, "p", "w"],
            ["fig", 10, "f", "x"],
            ["apple", null, "a", "y"],
            ["kiwi", 7, "k", "z"],
            ["total", 20, "", "t"]
        ]);
        let f = filled(rows).await;
        // Rows 2–5 (not the header, not the total), columns A–C, by qty descending.
        let range =
            json!({"sheetId": 0, "startRowIndex": 1, "endRowIndex": 5, "startColumnIndex": 0, "endColumnIndex": 3});
        let sort =
            json!({"sortRange": {"range": range, "sortSpecs": [{"dimensionIndex": 1, "sortOrder": "DESCENDING"}]}});
        let reply = f.batch_update(&f.access_token, json!({"requests": [sort]})).await;
        assert_eq!(reply.status, 200, "{:?}", reply.body);
        let expected = json!([
            ["name", "qty", "note", "outside"],
            ["fig", 10, "f", "w"],
            ["kiwi", 7, "k", "x"],
            ["pear", 3, "p", "y"],
            ["apple", null, "a", "z"],
            ["total", 20, null, "t"]
        ]);
        assert_eq!(held(&f), expected, "the empty qty sorts last; column D and rows 1 and 6 stay");
        assert_eq!(f.sandbox.calls().last().map(|c| c.rows), Some(4));
    })
    .await;
}

#[tokio::test]
async fn requests_apply_in_order_all_or_nothing_and_refusals_name_the_problem() {
    bounded(async {
        let f = filled(json!([["r1"], ["r2"], ["r3"]])).await;
        let t = &f.access_token;
        // Each request sees the sheet as the one before left it.
        let two = json!({"requests": [
            {"deleteDimension": {"range": rows_range(0, 0, 1)}},
            {"insertDimension": {"range": rows_range(0, 1, 2)}}
        ], "includeSpreadsheetInResponse": true});
        let reply = f.batch_update(t, two).await;
        assert_eq!(reply.body["replies"], json!([{}, {}]));
        assert_eq!(reply.body["updatedSpreadsheet"]["sheets"][1]["properties"]["sheetId"], FORM_GID);
        assert_eq!(held(&f), json!([["r2"], [], ["r3"]]));

        let refusals = [
            (
                json!([{"deleteDimension": {"range": rows_range(0, 0, 1)}},
                       {"deleteDimension": {"range": rows_range(0, 1, 5000)}}]),
                "Invalid requests[1].deleteDimension: Cannot delete a row that doesn't exist. Tried to delete row \
                 index 1002 but there are only 1002 rows.",
            ),
            (
                json!([{"insertDimension": {"range": rows_range(9, 0, 1)}}]),
                "Invalid requests[0].insertDimension: No grid with id: 9",
            ),
            (
                json!([{"sortRange": {"range": {"sheetId": 0, "startColumnIndex": 0, "endColumnIndex": 1},
                                      "sortSpecs": [{"dimensionIndex": 3}]}}]),
                "Invalid requests[0].sortRange: sortSpecs[0].dimensionIndex (3) is not one of the range's columns \
                 (0 to 0).",
            ),
            (
                json!([{"deleteDimension": {"range": {"sheetId": 0, "dimension": "ROWS", "startIndex": 0}}}]),
                "Invalid requests[0].deleteDimension: range.endIndex must be set",
            ),
            (
                json!([{"insertDimension": {"range": rows_range(0, 0, 1), "inheritBefore": true}}]),
                "Invalid JSON payload received. Unknown name \"inheritBefore\" at 'requests[0].insert_dimension': \
                 Cannot find field.",
            ),
            (json!([]), "Must specify at least one request."),
        ];
        for (requests, message) in refusals {
            let reply = f.batch_update(t, json!({ "requests": requests })).await;
            assert_eq!((reply.status, reply.message()), (400, message));
            assert_eq!(reply.body["error"]["status"], "INVALID_ARGUMENT");
        }
        assert_eq!(held(&f), json!([["r2"], [], ["r3"]]), "no refused batch changed anything");
        let refused: Vec<_> =
            f.sandbox.calls().into_iter().filter(|c| c.op == SheetsOp::BatchUpdate && c.status == 400).collect();
        assert_eq!(refused.len(), 6);
        assert!(refused.iter().all(|c| c.counted && !c.applied));
    })
    .await;
}

#[tokio::test]
async fn batch_update_is_gated_counted_and_faulted_as_a_write() {
    bounded(async {
        let config = SheetsSandboxConfig { write_per_user: 3, ..SheetsSandboxConfig::default() };
        let f = Fixture::start(config).await;
        let delete = json!({"requests": [{"deleteDimension": {"range": rows_range(0, 0, 1)}}]});
        assert_eq!(f.batch_update("ya29.nobody", delete.clone()).await.status, 401);
        f.sandbox.inject(SheetsFault::Status { op: SheetsOp::BatchUpdate, status: 503, times: 1 });
        assert_eq!(f.batch_update(&f.access_token, delete.clone()).await.status, 503);
        assert_eq!(f.append(&f.access_token, "Sheet1", "RAW", json!([["a"]])).await.status, 200);
        assert_eq!(f.batch_update(&f.access_token, delete.clone()).await.status, 200);
        // The fourth write in the window, whichever kind, is over the quota.
        let refused = f.batch_update(&f.access_token, delete).await;
        assert_eq!(refused.status, 429);
        assert_eq!(refused.body["error"]["details"][0]["metadata"]["quota_limit"], "WriteRequestsPerMinutePerUser");
        let url = |rest: &str| format!("{}/v4/spreadsheets/{rest}", f.sandbox.base_url());
        let other = f.http.post(url(&format!("{SPREADSHEET}:copyTo"))).bearer_auth(&f.access_token).send().await;
        assert_eq!(other.unwrap().status(), 404);
        let writes = f.sandbox.calls().into_iter().filter(|c| c.op.is_write() && c.counted).count();
        assert_eq!(writes, 3);
    })
    .await;
}

#[tokio::test]
async fn a_person_edits_rows_without_spending_quota_or_being_recorded() {
    bounded(async {
        let f = filled(json!([["c", 3], ["a", 1], ["b", 2]])).await;
        let seen = f.sandbox.calls().len();
        f.sandbox.sort_rows(SPREADSHEET, FIRST_GID, 0..3, 1, false).unwrap();
        assert_eq!(held(&f), json!([["a", 1], ["b", 2], ["c", 3]]));
        f.sandbox.insert_rows(SPREADSHEET, FIRST_GID, 1..2).unwrap();
        f.sandbox.delete_rows(SPREADSHEET, FIRST_GID, 0..1).unwrap();
        assert_eq!(held(&f), json!([[], ["b", 2], ["c", 3]]));
        assert_eq!(f.sandbox.calls().len(), seen, "a person's edits are not API calls");
        assert!(matches!(
            f.sandbox.delete_rows(SPREADSHEET, 99, 0..1),
            Err(SheetsSandboxError::UnknownSheet { gid: 99, .. })
        ));
        let past = f.sandbox.delete_rows(SPREADSHEET, FIRST_GID, 5..5000).unwrap_err();
        assert!(matches!(&past, SheetsSandboxError::InvalidInput(m) if m.contains("doesn't exist")), "{past}");

        // The same over the control plane.
        let path = format!("/spreadsheets/{SPREADSHEET}/sheets/{FIRST_GID}/rows");
        let sort = json!({"start": 0, "end": 3, "column": 0, "descending": true});
        assert_eq!(f.control(Method::POST, &format!("{path}/sort"), Some(sort)).await.status, 200);
        assert_eq!(held(&f), json!([["c", 3], ["b", 2]]));
        let delete = f.control(Method::POST, &format!("{path}/delete"), Some(json!({"start": 0, "end": 1}))).await;
        assert_eq!(delete.status, 200, "{:?}", delete.body);
        assert_eq!(
            f.control(Method::POST, &format!("{path}/insert"), Some(json!({"start": 0, "end": 2}))).await.status,
            200
        );
        assert_eq!(held(&f), json!([[], [], ["b", 2]]));
        let unsorted = f.control(Method::POST, &format!("{path}/sort"), Some(json!({"start": 0, "end": 1}))).await;
        assert_eq!(unsorted.status, 400);
        let missing =
            f.control(Method::POST, "/spreadsheets/nope/sheets/0/rows/delete", Some(json!({"start": 0, "end": 1})));
        assert_eq!(missing.await.status, 404);
        assert_eq!(f.sandbox.calls().len(), seen);
    })
    .await;
}
