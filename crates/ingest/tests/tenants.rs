//! Ingest takes work only for enrolled tenants (`sluice_ingest::tenants`):
//! a webhook for a mall, or a row for a credential, that sluice was never
//! given a token for is answered 422 `unknown_tenant` naming the field,
//! and leaves no key behind: no delivery, no trace, no hold, no parked
//! row, nothing in the queue. Storing the tenant's token enrols it.

use crate::support;

use reqwest::StatusCode;
use serde_json::{Value, json};
use sluice_ingest::TenantPolicy;
use sluice_redis::{Enrolments, StoredToken, Tag, TokenStore};
use support::{Harness, KEY, product};

const NOW_MS: u64 = 1_763_000_000_000;

fn row(credential: &str, row_id: &str) -> Value {
    json!({
        "credential_id": credential, "spreadsheet_id": "1Sheet_id", "sheet_id": 0,
        "submission_id": "sub-1", "row_id": row_id, "values": ["ada", 42]
    })
}

/// A harness running the default policy, as every deployment does.
async fn enrolled_only(test: &str) -> Harness {
    Harness::start_with(test, |config| config.tenants = TenantPolicy::default()).await
}

async fn store_token(h: &Harness, tag: &Tag, name: &str) {
    let token = StoredToken {
        access_token: "a".into(),
        access_expires_ms: u64::MAX / 2,
        refresh_token: "r".into(),
        refresh_expires_ms: u64::MAX / 2,
    };
    TokenStore::new(h.redis.conn().await, h.keyspace()).put(tag, name, &token, NOW_MS).await.unwrap();
}

fn assert_unknown_tenant(status: StatusCode, answer: &Value, field: &str) {
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert_eq!(answer["error"]["code"], "unknown_tenant", "{answer}");
    assert_eq!(answer["error"]["field"], field, "{answer}");
}

#[tokio::test]
async fn a_mall_without_a_stored_token_is_refused_and_leaves_nothing() {
    let h = enrolled_only("tenant_mall").await;
    let (status, answer) = h.send(&product("invented", 7), Some("t-1")).await;
    assert_unknown_tenant(status, &answer, "resource.mall_id");
    assert!(answer["error"]["message"].as_str().unwrap().contains("sluice tokens set invented"), "{answer}");
    assert_eq!(h.redis.keys().await, Vec::<String>::new(), "an invented mall left keys");
    assert_eq!(h.visible().await, 0);
    assert_eq!(h.ingest.snapshot().rejected[sluice_ingest::ErrorCode::UnknownTenant], 1);

    // Storing its token enrols it: the same delivery is taken now.
    store_token(&h, &Tag::for_mall("invented"), "cafe24").await;
    let (status, answer) = h.send(&product("invented", 7), Some("t-1")).await;
    assert_eq!((status, answer["status"].as_str()), (StatusCode::ACCEPTED, Some("enqueued")), "{answer}");
    assert_eq!(h.visible().await, 1);
}

#[tokio::test]
async fn a_row_for_a_credential_never_stored_is_refused_and_leaves_nothing() {
    let h = enrolled_only("tenant_credential").await;
    let (status, answer) = h.post_row(&row("made-up", "row-1"), Some(KEY)).await;
    assert_unknown_tenant(status, &answer, "credential_id");
    assert_eq!(h.redis.keys().await, Vec::<String>::new(), "an invented credential left keys (even a trace)");
    assert_eq!(h.visible().await, 0);

    store_token(&h, &Tag::for_credential("made-up"), "google").await;
    let (status, answer) = h.post_row(&row("made-up", "row-1"), Some(KEY)).await;
    assert_eq!((status, answer["status"].as_str()), (StatusCode::ACCEPTED, Some("enqueued")), "{answer}");
}

#[tokio::test]
async fn a_withdrawn_tenant_is_refused_by_an_ingest_that_did_not_just_see_it() {
    let h = enrolled_only("tenant_withdrawn").await;
    store_token(&h, &Tag::for_mall("gone"), "cafe24").await;
    let enrolments = Enrolments::new(h.redis.conn().await, h.keyspace());
    assert!(enrolments.withdraw(&Tag::for_mall("gone"), "cafe24").await.unwrap());
    let (status, answer) = h.send(&product("gone", 1), None).await;
    assert_unknown_tenant(status, &answer, "resource.mall_id");
    // Its token stays: withdrawing is about ingest, not the pipeline.
    assert!(
        TokenStore::new(h.redis.conn().await, h.keyspace())
            .get(&Tag::for_mall("gone"), "cafe24")
            .await
            .unwrap()
            .is_some()
    );
}

/// The review's case: a key holder inventing tenants. 1,000 webhooks for
/// random malls and 1,000 rows for random credentials leave no key at all
/// (so none without an expiry or an owner), next to an enrolled mall whose
/// webhook is taken as usual.
#[tokio::test]
async fn a_thousand_invented_tenants_leave_no_key() {
    let h = enrolled_only("tenant_flood").await;
    store_token(&h, &Tag::for_mall("real"), "cafe24").await;
    let before = h.redis.keys().await;
    let mut refused = 0;
    for i in 0..1_000u64 {
        let mall = format!("m{:08x}", sluice_redis::keyspace::stable_hash(&i.to_string()) as u32);
        let (status, answer) = h.send(&product(&mall, i + 1), None).await;
        refused +=
            usize::from(status == StatusCode::UNPROCESSABLE_ENTITY && answer["error"]["code"] == "unknown_tenant");
        let credential = format!("c{i}");
        let (status, answer) = h.post_row(&row(&credential, &format!("row-{i}")), Some(KEY)).await;
        refused +=
            usize::from(status == StatusCode::UNPROCESSABLE_ENTITY && answer["error"]["code"] == "unknown_tenant");
    }
    assert_eq!(refused, 2_000);
    assert_eq!(h.redis.keys().await, before, "invented tenants left keys");
    assert_eq!(h.visible().await, 0);
    let (status, answer) = h.send(&product("real", 1), None).await;
    assert_eq!((status, answer["status"].as_str()), (StatusCode::ACCEPTED, Some("enqueued")), "{answer}");
}
