//! Invariant 4: two different events never share a deduplication id; a
//! redelivery of the same event always does.

use proptest::prelude::*;
use sluice_domain::{ResourceKind, ResourceRef, SheetRow, ShopEvent, Topic, sqs_token};

/// Ids drawn to provoke collisions: short strings over a tiny alphabet that
/// includes the separators and escape characters, plus long ones that force
/// the hashed form.
fn id() -> impl Strategy<Value = String> {
    prop_oneof!["[ab:%_#]{1,6}", "[a-z0-9:%]{100,256}", "\\PC{1,40}",]
}

fn kind() -> impl Strategy<Value = ResourceKind> {
    prop::sample::select(ResourceKind::ALL.to_vec())
}

fn shop_event() -> impl Strategy<Value = ShopEvent> {
    (id(), 0u32..4, kind(), id(), id()).prop_map(|(mall, topic, kind, rid, delivery)| ShopEvent {
        mall_id: mall,
        topic: Topic(90000 + topic),
        resource: ResourceRef { kind, id: rid },
        delivery_id: delivery,
    })
}

fn sheet_row() -> impl Strategy<Value = SheetRow> {
    (id(), id(), 0u64..3, id(), id(), prop::collection::vec(any::<i64>(), 1..4)).prop_map(
        |(cred, spreadsheet, gid, submission, row, values)| SheetRow {
            credential_id: cred,
            spreadsheet_id: spreadsheet,
            sheet_gid: gid,
            submission_id: submission,
            row_id: row,
            values: values.into_iter().map(Into::into).collect(),
            header: None,
        },
    )
}

fn same_shop_identity(a: &ShopEvent, b: &ShopEvent) -> bool {
    a.mall_id == b.mall_id && a.topic == b.topic && a.resource == b.resource && a.delivery_id == b.delivery_id
}

fn same_row_identity(a: &SheetRow, b: &SheetRow) -> bool {
    (&a.credential_id, &a.spreadsheet_id, a.sheet_gid, &a.submission_id, &a.row_id)
        == (&b.credential_id, &b.spreadsheet_id, b.sheet_gid, &b.submission_id, &b.row_id)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn different_shop_events_never_share_an_id(a in shop_event(), b in shop_event()) {
        prop_assume!(!same_shop_identity(&a, &b));
        prop_assert_ne!(a.dedup_id(), b.dedup_id());
    }

    #[test]
    fn shop_events_differing_in_one_field_get_different_ids(a in shop_event(), other in id(), field in 0..4usize) {
        let mut b = a.clone();
        match field {
            0 => b.mall_id = other,
            1 => b.resource.id = other,
            2 => b.delivery_id = other,
            _ => b.topic = Topic(a.topic.0 + 1),
        }
        prop_assume!(!same_shop_identity(&a, &b));
        prop_assert_ne!(a.dedup_id(), b.dedup_id());
    }

    #[test]
    fn a_redelivered_shop_event_keeps_its_id(a in shop_event()) {
        // A redelivery is the same event parsed again from the wire.
        let redelivered: ShopEvent = serde_json::from_str(&serde_json::to_string(&a).unwrap()).unwrap();
        prop_assert_eq!(a.dedup_id(), redelivered.dedup_id());
    }

    #[test]
    fn different_sheet_rows_never_share_an_id(a in sheet_row(), b in sheet_row()) {
        prop_assume!(!same_row_identity(&a, &b));
        prop_assert_ne!(a.dedup_id(), b.dedup_id());
    }

    #[test]
    fn a_redelivered_sheet_row_keeps_its_id(a in sheet_row(), values in prop::collection::vec(any::<bool>(), 1..3)) {
        let mut redelivered: SheetRow = serde_json::from_str(&serde_json::to_string(&a).unwrap()).unwrap();
        prop_assert_eq!(a.dedup_id(), redelivered.dedup_id());
        // Values are content, not identity: a re-sent row is still the same row.
        redelivered.values = values.into_iter().map(Into::into).collect();
        prop_assert_eq!(a.dedup_id(), redelivered.dedup_id());
    }

    #[test]
    fn every_id_is_valid_for_sqs(a in shop_event(), b in sheet_row()) {
        prop_assert!(sqs_token::is_valid(a.dedup_id().as_str()), "{}", a.dedup_id());
        prop_assert!(sqs_token::is_valid(b.dedup_id().as_str()), "{}", b.dedup_id());
        prop_assert!(sqs_token::is_valid(a.group_key().as_str()));
        prop_assert!(sqs_token::is_valid(b.group_key().as_str()));
    }

    #[test]
    fn token_encoding_is_injective(a in prop::collection::vec(id(), 1..4), b in prop::collection::vec(id(), 1..4)) {
        prop_assume!(a != b);
        let ar: Vec<&str> = a.iter().map(String::as_str).collect();
        let br: Vec<&str> = b.iter().map(String::as_str).collect();
        prop_assert_ne!(sqs_token::encode("x", &ar), sqs_token::encode("x", &br));
    }
}
