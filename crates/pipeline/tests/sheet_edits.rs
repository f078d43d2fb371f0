//! Exactly once in a sheet people also work in (issue 38): rows deleted,
//! typed and sorted by a person while an append's outcome is uncertain,
//! and an append Google applies after sluice gave up on its answer. Each
//! row id ends in the sheet once (rows a person deleted stay deleted) and
//! each row's trace ends with its outcome.

use crate::sheet_support;

use serde_json::json;
use sheet_support::{DOC, SheetTest};
use sluice_domain::row_trace_id;
use sluice_pipeline::SheetConfig;
use sluice_pipeline::sheet_io::FlushNext;
use sluice_redis::Traces;
use sluice_sandbox::{SheetsFault, SheetsOp, SheetsSandboxConfig};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);
/// The client gives up on an answer after this.
const TIMEOUT: Duration = Duration::from_secs(1);

async fn start(test: &str, apply_horizon: Duration) -> SheetTest {
    let settings = SheetConfig { flush_lease: Duration::from_secs(3), apply_horizon, ..SheetConfig::default() };
    SheetTest::start(test, SheetsSandboxConfig::default(), settings, TIMEOUT).await
}

fn ids(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

fn applied_appends(t: &SheetTest) -> usize {
    t.sandbox.calls().iter().filter(|c| c.op == SheetsOp::ValuesAppend && c.applied).count()
}

/// Each row's trace ends with `COMPLETED`.
async fn assert_completed(t: &SheetTest, rows: &[String]) {
    let traces = Traces::new(t.redis.conn().await, t.redis.keyspace(), Duration::from_secs(60));
    for row in rows {
        let entries = traces.read(&row_trace_id(sheet_support::USER, row)).await.unwrap();
        let last = entries.last().map(|e| e.stage.as_str());
        assert_eq!(last, Some("COMPLETED"), "{row}: {:?}", entries.iter().map(|e| &e.stage).collect::<Vec<_>>());
    }
}

#[tokio::test]
async fn rows_deleted_above_an_append_applied_but_answered_503_are_not_sent_again() {
    tokio::time::timeout(LIMIT, async {
        let t = start("edits_delete_503", Duration::from_secs(200)).await;
        t.buffer_all(0, &ids(&["r-1", "r-2", "r-3", "r-4"])).await;
        t.flush_until_idle(0, 5).await;
        // A person adds two rows of their own, deletes one, and deletes
        // the spam rows r-2 and r-3: everything below moves up, past the
        // row sluice last knew as the sheet's end.
        t.sandbox.type_rows(DOC, 0, &[vec![json!("p-1"), json!("mine")], vec![json!("p-2"), json!("mine")]]).unwrap();
        t.sandbox.delete_rows(DOC, 0, 5..6).unwrap();
        t.sandbox.delete_rows(DOC, 0, 2..4).unwrap();
        t.buffer_all(0, &ids(&["r-5", "r-6"])).await;
        t.sandbox.inject(SheetsFault::ApplyThenStatus { op: SheetsOp::ValuesAppend, status: 503 });
        t.flush_until_idle(0, 6).await;
        assert_eq!(t.column_a(0), ["row_id", "r-1", "r-4", "p-2", "r-5", "r-6"]);
        assert_eq!(applied_appends(&t), 2, "r-5 and r-6 went out once");
        assert_completed(&t, &ids(&["r-5", "r-6"])).await;
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_sort_while_an_applied_appends_answer_is_held_moves_nothing_twice() {
    tokio::time::timeout(LIMIT, async {
        let t = start("edits_sort_held", Duration::from_secs(200)).await;
        t.buffer_all(0, &ids(&["r-1", "r-2", "r-3", "r-4"])).await;
        t.flush_until_idle(0, 5).await;
        // Applied, its answer held past the client's timeout.
        t.sandbox.inject(SheetsFault::ApplyThenHold { op: SheetsOp::ValuesAppend, hold: Duration::from_secs(3) });
        t.buffer_all(0, &ids(&["r-5", "r-6"])).await;
        assert_eq!(t.flush(0).await.next, FlushNext::Later);
        // A recruiter sorts the rows, newest first: the landed batch is at
        // the top now, far above where it was appended.
        t.sandbox.sort_rows(DOC, 0, 1..7, 0, true).unwrap();
        t.flush_until_idle(0, 6).await;
        assert_eq!(t.column_a(0), ["row_id", "r-6", "r-5", "r-4", "r-3", "r-2", "r-1"]);
        assert_eq!(applied_appends(&t), 2);
        assert_completed(&t, &ids(&["r-5", "r-6"])).await;
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn an_append_applied_after_sluice_gave_up_is_waited_for_not_sent_again() {
    tokio::time::timeout(LIMIT, async {
        let t = start("edits_applied_late", Duration::from_secs(4)).await;
        // Not applied when the client gives up (1 s); applied at 2.5 s.
        let late = SheetsFault::AppliedLate {
            op: SheetsOp::ValuesAppend,
            hold: Duration::from_secs(3),
            apply_after: Some(Duration::from_millis(2_500)),
        };
        t.sandbox.inject(late);
        let rows = ids(&["r-1", "r-2", "r-3"]);
        t.buffer_all(0, &rows).await;
        assert_eq!(t.flush(0).await.next, FlushNext::Later);
        // Looked for at once: not there yet, and it may still land.
        let looked = t.flush(0).await;
        assert_eq!((looked.next, looked.appended_rows), (FlushNext::Later, 0));
        assert_eq!(t.sandbox.late_calls().applied, 0, "the check came before the late write");
        t.flush_until_idle(0, 10).await;
        assert_eq!(t.column_a(0), ["row_id", "r-1", "r-2", "r-3"]);
        assert_eq!(t.sandbox.calls().iter().filter(|c| c.op == SheetsOp::ValuesAppend).count(), 1, "sent once");
        assert_completed(&t, &rows).await;
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn an_append_that_never_lands_is_sent_again_once_the_horizon_has_passed() {
    tokio::time::timeout(LIMIT, async {
        let t = start("edits_never_lands", Duration::from_secs(2)).await;
        // Held and never applied by itself: Google gave up on it.
        let lost =
            SheetsFault::AppliedLate { op: SheetsOp::ValuesAppend, hold: Duration::from_secs(2), apply_after: None };
        t.sandbox.inject(lost);
        let rows = ids(&["r-1", "r-2"]);
        t.buffer_all(0, &rows).await;
        t.flush_until_idle(0, 10).await;
        assert_eq!(t.column_a(0), ["row_id", "r-1", "r-2"]);
        assert_eq!(t.sandbox.calls().iter().filter(|c| c.op == SheetsOp::ValuesAppend).count(), 2);
        assert_completed(&t, &rows).await;
    })
    .await
    .unwrap();
}

/// Past every horizon anyone can know: the first append lands after its
/// rows were sent again. The copies are found at the sheet's next idle
/// moment after the horizon, and reported: trace, metric, alert.
#[tokio::test]
async fn a_copy_landing_past_the_horizon_is_found_and_reported() {
    tokio::time::timeout(LIMIT, async {
        let t = start("edits_copy_reported", Duration::from_secs(2)).await;
        let held =
            SheetsFault::AppliedLate { op: SheetsOp::ValuesAppend, hold: Duration::from_secs(2), apply_after: None };
        t.sandbox.inject(held);
        let rows = ids(&["r-1", "r-2"]);
        t.buffer_all(0, &rows).await;
        let appends = |t: &SheetTest| t.sandbox.calls().iter().filter(|c| c.op == SheetsOp::ValuesAppend).count();
        while appends(&t) < 2 {
            let out = t.flush(0).await;
            assert_ne!(out.next, FlushNext::Idle, "idle before the rows were sent again: {out:?}");
            tokio::time::sleep(Duration::from_secs(out.wait_seconds)).await;
        }
        // Now the first append lands, after all (with the header it
        // carried to the then empty sheet).
        assert_eq!(t.sandbox.release_late(), 1);
        assert_eq!(t.column_a(0), ["row_id", "r-1", "r-2", "row_id", "r-1", "r-2"]);
        t.flush_until_idle(0, 10).await;
        let traces = Traces::new(t.redis.conn().await, t.redis.keyspace(), Duration::from_secs(60));
        for row in &rows {
            let stages: Vec<String> = traces
                .read(&row_trace_id(sheet_support::USER, row))
                .await
                .unwrap()
                .into_iter()
                .map(|e| e.stage)
                .collect();
            assert!(stages.contains(&"DUPLICATED".to_owned()), "{row}: {stages:?}");
        }
        let counted = sluice_pipeline::step_metrics::COUNTERS
            .iter()
            .find(|c| c.name == "sheet_rows_duplicated")
            .map(|c| c.get(t.steps.core().metrics()));
        assert_eq!(counted, Some(2));
        let alerts = t.alerts.lock().unwrap().clone();
        assert!(alerts.iter().any(|a| a.contains("more than once") && a.contains("r-1")), "{alerts:?}");
        // And `sluice status` shows it under the sheet.
        let status = sluice_pipeline::StatusReader::new(t.steps.core().clone());
        let credential = status.credential_status(sheet_support::USER).await.unwrap();
        assert_eq!(credential.sheets.iter().map(|s| (s.sheet_gid, s.duplicated)).collect::<Vec<_>>(), [(0, 2)]);
    })
    .await
    .unwrap();
}
