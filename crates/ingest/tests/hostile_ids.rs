//! Ids built to break key names: `a}{b` next to `a`, braces, slashes,
//! colons and spaces, in every id a sender controls on both paths. Each
//! must stay a tenant (or resource, or row) of its own, with Redis keys of
//! its own, and every script call must keep all its keys in one cluster
//! slot. The ingest runs on a cluster of three masters, where a call whose
//! keys span two slots fails with CROSSSLOT, and through a connection that
//! checks the slot of every key of every script call it sends.

use crate::support;

use reqwest::StatusCode;
use serde_json::{Value, json};
use sluice_domain::{WorkItem, row_trace_id};
use sluice_redis::Tag;
use sluice_testkit::TestRedis;
use sluice_testkit::slot_check::{SlotCheckingConnection, SlotLog};
use std::collections::BTreeSet;
use std::sync::Arc;
use support::{Harness, KEY};

/// Ids that would meet (or leave their hash tag) if pasted into key names.
const HOSTILE: [&str; 15] =
    ["a", "a}{b", "a{b}", "{a}", "}{", "{", "}", "{}", "a/b", "a:b", "a b", ":", "/", "a%7D%7Bb", "a}"];

async fn harness(test: &str) -> (Harness<SlotCheckingConnection<sluice_redis::Connection>>, Arc<SlotLog>) {
    let redis = TestRedis::cluster(test);
    let log = SlotLog::new();
    let conn = SlotCheckingConnection { inner: support::connection(redis.settings()).await, log: log.clone() };
    (Harness::start_on(redis, conn, |_| {}).await, log)
}

/// Every script call stayed in one slot, and every key has a hash tag of
/// its own (a key without one would be hashed whole).
async fn assert_slots_kept<C>(h: &Harness<C>, log: &SlotLog) {
    assert!(!log.calls().is_empty(), "no script call was seen");
    assert_eq!(log.cross_slot(), Vec::<Vec<String>>::new(), "script calls whose keys span two slots");
    let prefix = h.redis.keyspace().prefix().to_owned();
    for key in h.redis.keys().await {
        let rest = &key[prefix.len()..];
        let tag = rest.strip_prefix('{').and_then(|r| r.split_once('}')).map(|(tag, _)| tag);
        assert!(tag.is_some_and(|t| !t.is_empty() && !t.contains('{')), "{key:?} has no hash tag of its own");
    }
}

#[tokio::test]
async fn hostile_resource_and_delivery_ids_stay_apart_in_one_slot_each() {
    let (h, log) = harness("hostile_resource_ids").await;
    let mut event_ids = BTreeSet::new();
    for (i, id) in HOSTILE.iter().enumerate() {
        let body = json!({"event_no": 90023, "resource": {"mall_id": "acme", "order_id": id}});
        let (status, answer) = h.post(body.to_string(), Some(KEY), Some(&format!("t-{i}"))).await;
        assert_eq!(status, StatusCode::ACCEPTED, "order {id:?}: {answer}");
        // Any meeting of two ids would make the later one join the
        // earlier's pending fetch (`coalesced`) or a `duplicate`.
        assert_eq!(answer["status"], "enqueued", "order {id:?}: {answer}");
        event_ids.insert(support::event_id(&answer));
    }
    assert_eq!(event_ids.len(), HOSTILE.len());

    // The same resource delivered under two trace ids that would meet if
    // pasted: a second delivery (joining the first's fetch), not a duplicate.
    let body = json!({"event_no": 90023, "resource": {"mall_id": "acme", "order_id": "shared"}});
    let (status, first) = h.post(body.to_string(), Some(KEY), Some("a")).await;
    assert_eq!((status, &first["status"]), (StatusCode::ACCEPTED, &json!("enqueued")), "{first}");
    let (status, second) = h.post(body.to_string(), Some(KEY), Some("a}{b")).await;
    assert_eq!((status, &second["status"]), (StatusCode::ACCEPTED, &json!("coalesced")), "{second}");

    // Each resource has its own coalescing mark under the mall's tag.
    let keys: BTreeSet<String> = h.redis.keys().await.into_iter().collect();
    let tag = Tag::for_mall("acme");
    for id in HOSTILE {
        let mark = h.keyspace().key(&tag, "gate", &format!("order:{id}"));
        assert!(keys.contains(&mark), "no mark {mark:?} for order {id:?}");
    }

    let mut orders: Vec<String> = h
        .drain()
        .await
        .iter()
        .map(|m| match WorkItem::from_body(&m.body).unwrap() {
            WorkItem::Shop(work) => work.event.resource.id,
            other => panic!("not a shop event: {other:?}"),
        })
        .collect();
    orders.sort();
    let mut sent: Vec<String> = HOSTILE.iter().map(|s| (*s).to_owned()).chain(["shared".to_owned()]).collect();
    sent.sort();
    assert_eq!(orders, sent, "each id arrives in the queue as it was sent");
    assert_slots_kept(&h, &log).await;
}

#[tokio::test]
async fn mall_ids_with_key_syntax_are_refused_and_leave_nothing() {
    let (h, _log) = harness("hostile_mall_ids").await;
    for mall in HOSTILE.iter().filter(|m| **m != "a") {
        let (status, answer) = h.send(&support::product(mall, 1), Some("t-1")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "mall {mall:?}: {answer}");
        assert_eq!(answer["error"]["field"], "resource.mall_id", "mall {mall:?}: {answer}");
    }
    assert_eq!(h.visible().await, 0, "nothing is enqueued");
    assert_eq!(h.redis.keys().await, Vec::<String>::new(), "nothing is kept");
}

fn row(credential: &str, row_id: &str) -> Value {
    json!({
        "credential_id": credential, "spreadsheet_id": "1Sheet_id", "sheet_id": 0,
        "submission_id": "sub-1", "row_id": row_id, "values": ["x"]
    })
}

#[tokio::test]
async fn hostile_credential_and_row_ids_are_tenants_and_rows_of_their_own() {
    let (h, log) = harness("hostile_row_ids").await;
    // One row id under every credential: each credential is a sheet (a
    // FIFO group) of its own.
    for credential in HOSTILE {
        let (status, answer) = h.post_row(&row(credential, "shared-row"), Some(KEY)).await;
        assert_eq!((status, &answer["status"]), (StatusCode::ACCEPTED, &json!("enqueued")), "{credential:?}: {answer}");
        // ... with a log of its own: no tenant reads or writes another's.
        let stages = h.stages(&row_trace_id(credential, "shared-row")).await;
        assert_eq!(stages, ["INIT", "ENQUEUED"], "{credential:?}");
    }
    // Every row id under one credential: each has a log of its own.
    for row_id in HOSTILE {
        let (status, answer) = h.post_row(&row("cred", row_id), Some(KEY)).await;
        assert_eq!((status, &answer["status"]), (StatusCode::ACCEPTED, &json!("enqueued")), "{row_id:?}: {answer}");
        assert_eq!(h.stages(&row_trace_id("cred", row_id)).await, ["INIT", "ENQUEUED"], "row {row_id:?}");
    }

    let messages = h.drain().await;
    assert_eq!(messages.len(), 2 * HOSTILE.len());
    let groups: BTreeSet<&str> = messages.iter().map(|m| m.group.as_str()).collect();
    let dedups: BTreeSet<&str> = messages.iter().map(|m| m.dedup.as_str()).collect();
    assert_eq!(groups.len(), HOSTILE.len() + 1, "{groups:?}");
    assert_eq!(dedups.len(), messages.len(), "two rows share a deduplication id");
    let mut credentials: Vec<String> = messages
        .iter()
        .filter_map(|m| match WorkItem::from_body(&m.body).unwrap() {
            WorkItem::SheetRow(work) if work.row.row_id == "shared-row" => Some(work.row.credential_id),
            _ => None,
        })
        .collect();
    credentials.sort();
    let mut sent: Vec<String> = HOSTILE.iter().map(|s| (*s).to_owned()).collect();
    sent.sort();
    assert_eq!(credentials, sent, "each credential arrives in the queue as it was sent");

    // The pipeline's scopes of these tenants: each a tag of its own.
    let tags: BTreeSet<Tag> = HOSTILE.iter().map(|c| Tag::for_credential(c)).collect();
    assert_eq!(tags.len(), HOSTILE.len());
    let sheets: BTreeSet<Tag> = groups.iter().map(|g| Tag::for_sheet(g)).collect();
    assert_eq!(sheets.len(), groups.len());
    assert_slots_kept(&h, &log).await;
}
