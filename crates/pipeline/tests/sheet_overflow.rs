//! The buffer step under flow control per sheet, against the sandbox
//! Google Sheets: rows held in the sheet's overflow (as ingest holds them)
//! join the buffer when the last counted row is buffered, are traced
//! there, are covered by that step's flush request, and land once, in
//! arrival order, even when that step is run again.

use crate::sheet_support;

use sheet_support::{SheetTest, work};
use sluice_domain::BufferedRow;
use sluice_pipeline::SheetConfig;
use sluice_pipeline::sheet_io::FlushNext;
use sluice_redis::{RowAdmit, SheetBuffers, SheetFlow, Tag};
use sluice_sandbox::SheetsSandboxConfig;
use std::time::Duration;

#[tokio::test]
async fn the_last_counted_rows_step_moves_the_overflow_and_its_flush_lands_every_row_once_in_order() {
    tokio::time::timeout(Duration::from_secs(30), async {
        let t = SheetTest::start(
            "overflow_step",
            SheetsSandboxConfig::default(),
            SheetConfig::default(),
            Duration::from_secs(2),
        )
        .await;
        // Ingest's side: two rows counted, three held.
        let ingest = SheetBuffers::new(t.redis.conn().await, t.redis.keyspace())
            .with_flow(SheetFlow { max_queued: 2, ..SheetFlow::default() })
            .unwrap();
        let ids: Vec<String> = (0..5).map(|i| format!("v{i}")).collect();
        let sheet = Tag::for_sheet(work(0, "x").row.group_key().as_str());
        for (i, id) in ids.iter().enumerate() {
            let admit = ingest.admit(&sheet, id, &BufferedRow::from(&work(0, id)).to_json()).await.unwrap();
            assert_eq!(matches!(admit, RowAdmit::Send { .. }), i < 2, "{id}: {admit:?}");
        }
        let first = t.buffer_output(0, &ids[0]).await;
        assert_eq!((first.buffered, first.buffer_len, first.moved_from_overflow), (true, 1, 0));
        let last = t.buffer_output(0, &ids[1]).await;
        assert_eq!((last.buffered, last.buffer_len, last.moved_from_overflow), (true, 5, 3));
        let stages: Vec<String> =
            t.steps.traces().read("row:cred-1:v3").await.unwrap().into_iter().map(|e| e.stage).collect();
        assert_eq!(stages, ["BUFFERED"], "a moved row's trace says it is buffered");
        // The last step redelivered: nothing twice, nothing moved again.
        let again = t.buffer_output(0, &ids[1]).await;
        assert_eq!((again.buffered, again.buffer_len, again.moved_from_overflow), (false, 5, 0));
        let out = t.flush(0).await;
        assert_eq!((out.appended_rows, out.next), (5, FlushNext::Idle));
        assert_eq!(t.column_a(0)[1..], ids[..]);
        let backlog = ingest.backlog(&sheet).await.unwrap();
        assert_eq!((backlog.queued, backlog.overflow, backlog.buffered), (0, 0, 0));
    })
    .await
    .unwrap();
}
