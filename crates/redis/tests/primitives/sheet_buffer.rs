//! A sheet's buffer against a real redis-server: rows buffered once, moved
//! in flight before an append, settled after it, parked and redriven in
//! order.

use sluice_redis::{Claim, SheetBacklog, SheetBuffers, Tag};
use sluice_testkit::TestRedis;

type Conn = sluice_redis::Connection;

async fn buffers(redis: &TestRedis) -> SheetBuffers<Conn> {
    SheetBuffers::new(redis.conn().await, redis.keyspace())
}

fn row(i: usize) -> String {
    format!(r#"{{"row_id":"r{i}","values":["{}"]}}"#, "x".repeat(i % 7))
}

#[tokio::test]
async fn a_row_is_buffered_once_however_often_it_comes() {
    let redis = TestRedis::new("sheet_once");
    let buffers = buffers(&redis).await;
    let sheet = Tag::for_sheet("gr:cred:sheet:0");
    let buffer = async |id: &str, i| {
        let buffered = buffers.buffer(&sheet, id, &row(i)).await.unwrap();
        (buffered.added, buffered.buffer_len)
    };
    assert_eq!(buffer("r1", 1).await, (true, 1));
    assert_eq!(buffer("r1", 1).await, (false, 1));
    assert_eq!(buffer("r2", 2).await, (true, 2));
}

#[tokio::test]
async fn claims_respect_counts_and_bytes_and_settle_only_when_told() {
    let redis = TestRedis::new("sheet_claim");
    let buffers = buffers(&redis).await;
    let sheet = Tag::for_sheet("gr:c:s:1");
    assert_eq!(buffers.claim(&sheet, 10, 1_000_000).await.unwrap(), Claim::Empty);
    for i in 0..10 {
        buffers.buffer(&sheet, &format!("r{i}"), &row(i)).await.unwrap();
    }
    let Claim::Fresh(first) = buffers.claim(&sheet, 4, 1_000_000).await.unwrap() else { panic!("no fresh claim") };
    assert_eq!(first, (0..4).map(row).collect::<Vec<_>>());
    // Until settled, the same rows come back, marked as possibly appended.
    assert_eq!(buffers.claim(&sheet, 4, 1_000_000).await.unwrap(), Claim::Unknown(first.clone()));
    buffers.mark_unsent(&sheet).await.unwrap();
    assert_eq!(buffers.claim(&sheet, 4, 1_000_000).await.unwrap(), Claim::Unsent(first));
    buffers.complete(&sheet).await.unwrap();
    // A byte budget: rows 4, 5 and 6 are 32 + 33 + 34 bytes long.
    let budget = row(4).len() + row(5).len() + 1;
    let Claim::Fresh(second) = buffers.claim(&sheet, 100, budget).await.unwrap() else { panic!("no fresh claim") };
    assert_eq!(second, vec![row(4), row(5)]);
    // A single row over the budget still goes: a sheet never stalls.
    buffers.complete(&sheet).await.unwrap();
    let Claim::Fresh(big) = buffers.claim(&sheet, 100, 1).await.unwrap() else { panic!("no fresh claim") };
    assert_eq!(big, vec![row(6)]);
    assert_eq!(
        buffers.backlog(&sheet).await.unwrap(),
        SheetBacklog { buffered: 3, in_flight: 1, ..SheetBacklog::default() }
    );
}

#[tokio::test]
async fn parked_rows_come_back_ahead_of_newer_ones_in_order() {
    let redis = TestRedis::new("sheet_park");
    let buffers = buffers(&redis).await;
    let sheet = Tag::for_sheet("gr:c:s:2");
    for i in 0..6 {
        buffers.buffer(&sheet, &format!("r{i}"), &row(i)).await.unwrap();
    }
    buffers.claim(&sheet, 2, 1_000_000).await.unwrap();
    assert_eq!(buffers.park(&sheet).await.unwrap(), 2);
    buffers.claim(&sheet, 2, 1_000_000).await.unwrap();
    assert_eq!(buffers.park(&sheet).await.unwrap(), 2);
    buffers.buffer(&sheet, "r9", &row(9)).await.unwrap();
    assert_eq!(buffers.redrive(&sheet).await.unwrap(), 4);
    let Claim::Fresh(all) = buffers.claim(&sheet, 100, 1_000_000).await.unwrap() else { panic!("no fresh claim") };
    let expected: Vec<String> = [0, 1, 2, 3, 4, 5, 9].into_iter().map(row).collect();
    assert_eq!(all, expected);
}
