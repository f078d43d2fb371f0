//! The client against the Google Sheets sandbox over real HTTP on
//! 127.0.0.1: resolving titles, appending, reading and writing values,
//! and what happens when the sheet or spreadsheet is gone.

use crate::fixture;

use fixture::{Fixture, GID, LIMIT, SPREADSHEET, TITLE, USER, rows};
use serde_json::json;
use sluice_domain::ErrorKind;
use sluice_sandbox::sheets::SheetsOp;
use sluice_sheets::{CellRange, Missing, Outcome, ValueInputOption};

#[tokio::test]
async fn the_title_is_read_once_for_two_appends() {
    tokio::time::timeout(LIMIT, async {
        let f = Fixture::start().await;
        let title = f.client.sheet_title(&f.token, SPREADSHEET, GID).await;
        assert_eq!(title, Outcome::Ok(TITLE.to_owned()));
        for row in ["first", "second"] {
            let outcome = f.client.append(&f.token, SPREADSHEET, GID, &rows(&[&[row]]), ValueInputOption::Raw).await;
            assert!(matches!(outcome, Outcome::Ok(_)), "{outcome:?}");
        }
        let gets = f.calls(SheetsOp::SpreadsheetGet);
        assert_eq!(gets.len(), 1, "{gets:?}");
        assert_eq!((gets[0].user.as_deref(), gets[0].status), (Some(USER), 200));
        let appends = f.calls(SheetsOp::ValuesAppend);
        assert_eq!(appends.len(), 2);
        // The quoted title survived percent-encoding as one path segment.
        assert!(appends.iter().all(|c| c.range.as_deref() == Some("'Form responses 1'!A1")), "{appends:?}");
        assert_eq!(f.sandbox.sheet_values(SPREADSHEET, GID), Some(vec![vec![json!("first")], vec![json!("second")]]));
        // The other sheet of the same spreadsheet comes from the same answer.
        assert_eq!(f.client.sheet_title(&f.token, SPREADSHEET, 0).await, Outcome::Ok("Sheet1".to_owned()));
        assert_eq!(f.calls(SheetsOp::SpreadsheetGet).len(), 1);
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn appended_rows_come_back_from_get() {
    tokio::time::timeout(LIMIT, async {
        let f = Fixture::start().await;
        let first = rows(&[&["kim", "2"], &["lee", "3"]]);
        let Outcome::Ok(r) = f.client.append(&f.token, SPREADSHEET, GID, &first, ValueInputOption::UserEntered).await
        else {
            panic!("first append failed");
        };
        assert_eq!(r.spreadsheet_id, SPREADSHEET);
        assert_eq!(r.table_range, None, "the sheet was empty");
        assert_eq!(r.updates.updated_range.as_deref(), Some("'Form responses 1'!A1:B2"));
        assert_eq!((r.updates.updated_rows, r.updates.updated_columns, r.updates.updated_cells), (2, 2, 4));
        let second = vec![vec![json!("park"), json!(4), json!(true)]];
        let Outcome::Ok(r) = f.client.append(&f.token, SPREADSHEET, GID, &second, ValueInputOption::Raw).await else {
            panic!("second append failed");
        };
        assert_eq!(r.table_range.as_deref(), Some("'Form responses 1'!A1:B2"));
        assert_eq!(r.updates.updated_range.as_deref(), Some("'Form responses 1'!A3:C3"));

        // FORMATTED_VALUE: every cell a string as displayed.
        let Outcome::Ok(all) = f.client.get(&f.token, SPREADSHEET, GID, None).await else { panic!("get failed") };
        assert_eq!(all.major_dimension.as_deref(), Some("ROWS"));
        assert_eq!(
            all.values,
            vec![
                vec![json!("kim"), json!("2")],
                vec![json!("lee"), json!("3")],
                vec![json!("park"), json!("4"), json!("TRUE")]
            ]
        );
        let column = CellRange::parse("A2:A").unwrap();
        let Outcome::Ok(tail) = f.client.get(&f.token, SPREADSHEET, GID, Some(column)).await else { panic!() };
        assert_eq!(tail.values, vec![vec![json!("lee")], vec![json!("park")]]);
        assert!(tail.range.as_deref().is_some_and(|r| r.starts_with("'Form responses 1'!A2:A")), "{tail:?}");
        let Outcome::Ok(empty) = f.client.get(&f.token, SPREADSHEET, 0, None).await else { panic!() };
        assert!(empty.values.is_empty(), "{empty:?}");
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn update_writes_cells_in_place() {
    tokio::time::timeout(LIMIT, async {
        let f = Fixture::start().await;
        let table = rows(&[&["a", "b"], &["c", "d"]]);
        assert!(f.client.append(&f.token, SPREADSHEET, GID, &table, ValueInputOption::Raw).await.ok().is_some());
        let cells = CellRange::parse("B2").unwrap();
        let done = rows(&[&["done"]]);
        let outcome = f.client.update(&f.token, SPREADSHEET, GID, cells, &done, ValueInputOption::Raw).await;
        let Outcome::Ok(r) = outcome else { panic!("update failed: {outcome:?}") };
        assert_eq!((r.updated_range.as_deref(), r.updated_cells), (Some("'Form responses 1'!B2"), 1));
        let expected = vec![vec![json!("a"), json!("b")], vec![json!("c"), json!("done")]];
        assert_eq!(f.sandbox.sheet_values(SPREADSHEET, GID), Some(expected));
        let updates = f.calls(SheetsOp::ValuesUpdate);
        assert_eq!((updates.len(), updates[0].range.as_deref()), (1, Some("'Form responses 1'!B2")));
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_renamed_sheet_is_found_again_after_one_range_error() {
    tokio::time::timeout(LIMIT, async {
        let f = Fixture::start().await;
        let one = rows(&[&["x"]]);
        assert!(f.client.append(&f.token, SPREADSHEET, GID, &one, ValueInputOption::Raw).await.ok().is_some());
        f.sandbox.rename_sheet(SPREADSHEET, GID, "Orders").expect("the sheet exists");
        // The cached title no longer parses; nothing was written.
        let stale = f.client.append(&f.token, SPREADSHEET, GID, &one, ValueInputOption::Raw).await;
        assert!(matches!(stale, Outcome::BadRequest { status: 400, range: true, .. }), "{stale:?}");
        assert_eq!(stale.error_kind(), Some(ErrorKind::UpstreamUnavailable), "retryable");
        assert_eq!(f.sandbox.sheet_values(SPREADSHEET, GID).map(|v| v.len()), Some(1));
        // The retry resolves the gid afresh and lands under the new title.
        let Outcome::Ok(r) = f.client.append(&f.token, SPREADSHEET, GID, &one, ValueInputOption::Raw).await else {
            panic!("retry failed");
        };
        assert_eq!(r.updates.updated_range.as_deref(), Some("Orders!A2"));
        assert_eq!(f.calls(SheetsOp::SpreadsheetGet).len(), 2);
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_deleted_sheet_ends_in_not_found_for_its_gid() {
    tokio::time::timeout(LIMIT, async {
        let f = Fixture::start().await;
        let one = rows(&[&["x"]]);
        assert!(f.client.append(&f.token, SPREADSHEET, GID, &one, ValueInputOption::Raw).await.ok().is_some());
        f.sandbox.delete_sheet(SPREADSHEET, GID);
        let stale = f.client.append(&f.token, SPREADSHEET, GID, &one, ValueInputOption::Raw).await;
        assert!(matches!(stale, Outcome::BadRequest { range: true, .. }), "{stale:?}");
        let gone = f.client.append(&f.token, SPREADSHEET, GID, &one, ValueInputOption::Raw).await;
        assert_eq!(gone, Outcome::NotFound { missing: Missing::Sheet { gid: GID }, error: None });
        assert_eq!(gone.error_kind(), Some(ErrorKind::NotFound));
        // A gid that never existed is the same answer, from the first call.
        let never = f.client.get(&f.token, SPREADSHEET, 77, None).await;
        assert!(matches!(never, Outcome::NotFound { missing: Missing::Sheet { gid: 77 }, .. }), "{never:?}");
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn an_unknown_spreadsheet_is_not_found() {
    tokio::time::timeout(LIMIT, async {
        let f = Fixture::start().await;
        let one = rows(&[&["x"]]);
        let outcome = f.client.append(&f.token, "no-such-spreadsheet", 0, &one, ValueInputOption::Raw).await;
        assert!(matches!(outcome, Outcome::NotFound { missing: Missing::Spreadsheet, error: Some(_) }), "{outcome:?}");
        assert_eq!(outcome.error_kind(), Some(ErrorKind::NotFound));
        assert_eq!(f.calls(SheetsOp::SpreadsheetGet)[0].status, 404);
        assert!(f.calls(SheetsOp::ValuesAppend).is_empty(), "nothing to append to");
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_user_without_access_is_forbidden() {
    tokio::time::timeout(LIMIT, async {
        let f = Fixture::start().await;
        f.sandbox.deny_access(SPREADSHEET, USER);
        let outcome = f.client.get(&f.token, SPREADSHEET, GID, None).await;
        let Outcome::Forbidden { error: Some(e) } = &outcome else { panic!("{outcome:?}") };
        assert_eq!((e.code, e.status.as_str()), (403, "PERMISSION_DENIED"));
        assert_eq!(outcome.error_kind(), Some(ErrorKind::CredentialRejected));
    })
    .await
    .unwrap();
}
