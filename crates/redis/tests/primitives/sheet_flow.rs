//! Flow control per sheet against a real redis-server: rows counted in the
//! queue up to the threshold, the rest held in the sheet's overflow, which
//! joins the buffer behind the last counted row, so the buffer holds every
//! row once, in arrival order, across every switch.

use sluice_redis::{Buffered, RowAdmit, SheetBuffers, SheetFlow, Tag};
use sluice_testkit::TestRedis;
use std::time::Duration;

type Conn = sluice_redis::Connection;

const HORIZON: Duration = Duration::from_secs(30 * 60);

async fn buffers(redis: &TestRedis, max_queued: u32) -> SheetBuffers<Conn> {
    let flow = SheetFlow { max_queued, queued_horizon: HORIZON };
    SheetBuffers::new(redis.conn().await, redis.keyspace()).with_flow(flow).unwrap()
}

fn row(id: &str) -> String {
    format!(r#"{{"row_id":"{id}","event_id":"e-{id}","values":["{id}"]}}"#)
}

fn ids(n: std::ops::Range<usize>) -> Vec<String> {
    n.map(|i| format!("r{i:02}")).collect()
}

async fn buffered(redis: &TestRedis, sheet: &Tag) -> Vec<String> {
    let key = redis.keyspace().key(sheet, "buffer", "");
    redis::cmd("LRANGE").arg(key).arg(0).arg(-1).query_async(&mut redis.conn().await).await.unwrap()
}

fn moved_ids(moved: &[String]) -> Vec<String> {
    moved.iter().map(|r| sluice_domain::BufferedRow::row_id_of(r).unwrap()).collect()
}

#[tokio::test]
async fn rows_past_the_threshold_wait_in_the_overflow_and_join_the_buffer_in_order() {
    let redis = TestRedis::new("sheet_flow_order");
    let buffers = buffers(&redis, 3).await;
    let sheet = Tag::for_sheet("gr:cred:doc:0");
    let all = ids(0..12);
    for (i, id) in all[..8].iter().enumerate() {
        let admit = buffers.admit(&sheet, id, &row(id)).await.unwrap();
        if i < 3 {
            assert_eq!(admit, RowAdmit::Send { moved: vec![] }, "{id}");
        } else {
            assert_eq!(admit, RowAdmit::Overflowed { overflow_len: i as u64 - 2 }, "{id}");
        }
    }
    // The first counted rows are buffered; the overflow waits for the last.
    for id in &all[..2] {
        let step = buffers.buffer(&sheet, id, &row(id)).await.unwrap();
        assert!(step.added && step.moved.is_empty(), "{id}: {step:?}");
    }
    // A row arriving now is held too: the overflow is not empty.
    assert_eq!(buffers.admit(&sheet, &all[8], &row(&all[8])).await.unwrap(), RowAdmit::Overflowed { overflow_len: 6 });
    let last = buffers.buffer(&sheet, &all[2], &row(&all[2])).await.unwrap();
    assert!(last.added);
    assert_eq!(moved_ids(&last.moved), all[3..9]);
    assert_eq!(last.buffer_len, 9);
    let backlog = buffers.backlog(&sheet).await.unwrap();
    assert_eq!((backlog.overflow, backlog.queued), (0, 0));
    // With the overflow gone, rows go to the queue again, behind it.
    for id in &all[9..] {
        assert_eq!(buffers.admit(&sheet, id, &row(id)).await.unwrap(), RowAdmit::Send { moved: vec![] });
        buffers.buffer(&sheet, id, &row(id)).await.unwrap();
    }
    let in_buffer = moved_ids(&buffered(&redis, &sheet).await);
    assert_eq!(in_buffer, all);
}

#[tokio::test]
async fn a_row_sent_again_is_a_duplicate_once_buffered_or_held_and_keeps_its_place_while_queued() {
    let redis = TestRedis::new("sheet_flow_dups");
    let buffers = buffers(&redis, 2).await;
    let sheet = Tag::for_sheet("gr:cred:doc:1");
    let send = RowAdmit::Send { moved: vec![] };
    assert_eq!(buffers.admit(&sheet, "a", &row("a")).await.unwrap(), send);
    assert_eq!(buffers.admit(&sheet, "b", &row("b")).await.unwrap(), send);
    // "a" is counted: its retry is sent again (the queue drops the copy),
    // neither held behind rows that came after it nor counted twice.
    assert_eq!(buffers.admit(&sheet, "a", &row("a")).await.unwrap(), send);
    assert_eq!(buffers.backlog(&sheet).await.unwrap().queued, 2);
    assert_eq!(buffers.admit(&sheet, "c", &row("c")).await.unwrap(), RowAdmit::Overflowed { overflow_len: 1 });
    assert_eq!(buffers.admit(&sheet, "c", &row("c")).await.unwrap(), RowAdmit::Duplicate);
    buffers.buffer(&sheet, "a", &row("a")).await.unwrap();
    assert_eq!(buffers.admit(&sheet, "a", &row("a")).await.unwrap(), RowAdmit::Duplicate);
    // A redelivery of "a"'s message changes nothing.
    let again = buffers.buffer(&sheet, "a", &row("a")).await.unwrap();
    assert_eq!(again, Buffered { added: false, buffer_len: 1, moved: vec![] });
    let last = buffers.buffer(&sheet, "b", &row("b")).await.unwrap();
    assert_eq!(moved_ids(&last.moved), ["c"]);
    // The buffer step of "b" redelivered after it moved the overflow: no
    // row twice, nothing moved again.
    let redelivered = buffers.buffer(&sheet, "b", &row("b")).await.unwrap();
    assert_eq!(redelivered, Buffered { added: false, buffer_len: 3, moved: vec![] });
    assert_eq!(buffered(&redis, &sheet).await, [row("a"), row("b"), row("c")]);
}

#[tokio::test]
async fn counted_rows_past_the_horizon_or_whose_send_failed_stop_holding_the_overflow() {
    let redis = TestRedis::new("sheet_flow_lapse");
    let buffers = buffers(&redis, 2).await;
    let sheet = Tag::for_sheet("gr:cred:doc:2");
    for id in ["a", "b"] {
        assert_eq!(buffers.admit(&sheet, id, &row(id)).await.unwrap(), RowAdmit::Send { moved: vec![] });
    }
    assert_eq!(buffers.admit(&sheet, "c", &row("c")).await.unwrap(), RowAdmit::Overflowed { overflow_len: 1 });
    // "a"'s send failed; "b"'s message died without its buffer step
    // (counted long ago: its score is set back past the horizon).
    buffers.left(&sheet, "a").await.unwrap();
    let queued = redis.keyspace().key(&sheet, "queued", "");
    let (s, _): (u64, u64) = redis::cmd("TIME").query_async(&mut redis.conn().await).await.unwrap();
    let old = s * 1000 - HORIZON.as_millis() as u64 - 1;
    let _: i64 =
        redis::cmd("ZADD").arg(&queued).arg("XX").arg(old).arg("b").query_async(&mut redis.conn().await).await.unwrap();
    // Nothing counts any more: the next row moves the overflow into the
    // buffer and is let through behind it.
    let next = buffers.admit(&sheet, "d", &row("d")).await.unwrap();
    assert_eq!(next, RowAdmit::Send { moved: vec![row("c")] });
    assert_eq!(buffers.backlog(&sheet).await.unwrap().queued, 1);
    // The count lapses as a whole too: its TTL is the horizon.
    let ttl: i64 = redis::cmd("PTTL").arg(&queued).query_async(&mut redis.conn().await).await.unwrap();
    assert!(ttl > 0 && ttl <= HORIZON.as_millis() as i64, "{ttl}");
    let step = buffers.buffer(&sheet, "d", &row("d")).await.unwrap();
    assert_eq!(step, Buffered { added: true, buffer_len: 2, moved: vec![] });
    assert_eq!(buffered(&redis, &sheet).await, [row("c"), row("d")]);
}

#[tokio::test]
async fn a_concurrent_burst_counts_no_more_than_the_threshold() {
    let redis = TestRedis::new("sheet_flow_burst");
    let buffers = buffers(&redis, 10).await;
    let sheet = Tag::for_sheet("gr:cred:doc:3");
    let all = ids(0..200);
    let admits = all.iter().map(|id| {
        let (buffers, sheet) = (buffers.clone(), sheet.clone());
        async move { buffers.admit(&sheet, id, &row(id)).await.unwrap() }
    });
    let answers = futures::future::join_all(admits).await;
    let sent = answers.iter().filter(|a| matches!(a, RowAdmit::Send { .. })).count();
    assert_eq!(sent, 10);
    let backlog = buffers.backlog(&sheet).await.unwrap();
    assert_eq!((backlog.queued, backlog.overflow), (10, 190));
}

#[tokio::test]
async fn a_threshold_of_zero_is_refused() {
    let redis = TestRedis::new("sheet_flow_config");
    let flow = SheetFlow { max_queued: 0, ..SheetFlow::default() };
    assert!(SheetBuffers::new(redis.conn().await, redis.keyspace()).with_flow(flow).is_err());
}
