//! Cafe24 webhook event numbers (`event_no`) sluice understands: which
//! resource each names and what happened to it. The ingest's default topic
//! table and the sandbox both read this one table.
//!
//! Cafe24 numbers its webhook events; the numbers below come from Cafe24's
//! webhook reference as mirrored by a public typed client
//! (`shepherd231/cafe24api-client`, `cafe24-webhook-utils/src/event/*.ts`,
//! one `@eventId` per event). Every body has the shape
//! `{"event_no": N, "resource": {"mall_id": …, "<id field>": …, …}}`.
//!
//! | event_no | kind     | change  | Cafe24's description                          | id field     |
//! |----------|----------|---------|-----------------------------------------------|--------------|
//! | 90001    | product  | created | a product was registered                      | `product_no` |
//! | 90002    | product  | updated | a product was modified                        | `product_no` |
//! | 90003    | product  | deleted | a product was deleted                         | `product_no` |
//! | 90023    | order    | created | an order was placed                           | `order_id`   |
//! | 90024    | order    | updated | an order's shipping status changed            | `order_id`   |
//! | 90025    | order    | updated | an order's payment (deposit) status changed   | `order_id`   |
//! | 90032    | customer | created | a new member signed up                        | `member_id`  |
//! | 90070    | order    | deleted | an order form was deleted                     | `order_id`   |
//! | 90080    | customer | updated | a member's information changed                | `member_id`  |
//! | 90147    | customer | deleted | a member withdrew                             | `member_id`  |
//!
//! The source gives no body for 90147; we assume the common shape
//! (`mall_id`, `member_id`). Where a kind has several events for one change
//! (orders: 90024 and 90025), [`topic_for`] names the one the sandbox sends:
//! 90024, which carries the daily flood of shipping updates.

use crate::resource::{AdminResource, admin_resource};
use serde::{Deserialize, Serialize};
use sluice_domain::{ResourceKind, Topic};

/// What happened to the resource a webhook names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    Created,
    Updated,
    Deleted,
}

/// One Cafe24 webhook event number and what it means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WebhookTopic {
    pub event_no: u32,
    pub kind: ResourceKind,
    pub change: Change,
    pub description: &'static str,
}

impl WebhookTopic {
    pub const fn topic(&self) -> Topic {
        Topic(self.event_no)
    }

    pub fn resource(&self) -> &'static AdminResource {
        admin_resource(self.kind)
    }
}

const fn t(event_no: u32, kind: ResourceKind, change: Change, description: &'static str) -> WebhookTopic {
    WebhookTopic { event_no, kind, change, description }
}

/// Every event number sluice accepts by default, in ascending order.
pub const WEBHOOK_TOPICS: [WebhookTopic; 10] = [
    t(90001, ResourceKind::Product, Change::Created, "product created"),
    t(90002, ResourceKind::Product, Change::Updated, "product updated"),
    t(90003, ResourceKind::Product, Change::Deleted, "product deleted"),
    t(90023, ResourceKind::Order, Change::Created, "order placed"),
    t(90024, ResourceKind::Order, Change::Updated, "order shipping status changed"),
    t(90025, ResourceKind::Order, Change::Updated, "order payment status changed"),
    t(90032, ResourceKind::Customer, Change::Created, "member signed up"),
    t(90070, ResourceKind::Order, Change::Deleted, "order form deleted"),
    t(90080, ResourceKind::Customer, Change::Updated, "member information changed"),
    t(90147, ResourceKind::Customer, Change::Deleted, "member withdrew"),
];

/// The topic with this event number, if sluice knows it.
pub fn topic(event_no: u32) -> Option<&'static WebhookTopic> {
    WEBHOOK_TOPICS.iter().find(|t| t.event_no == event_no)
}

/// The event a change of this kind sends (the first listed for it).
pub fn topic_for(kind: ResourceKind, change: Change) -> &'static WebhookTopic {
    WEBHOOK_TOPICS
        .iter()
        .find(|t| t.kind == kind && t.change == change)
        .expect("WEBHOOK_TOPICS covers every kind and change (checked by a test)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_numbers_are_unique_and_sorted() {
        let numbers: Vec<u32> = WEBHOOK_TOPICS.iter().map(|t| t.event_no).collect();
        let mut sorted = numbers.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(numbers, sorted);
    }

    #[test]
    fn every_kind_and_change_has_a_topic() {
        for kind in ResourceKind::ALL {
            for change in [Change::Created, Change::Updated, Change::Deleted] {
                let t = topic_for(kind, change);
                assert_eq!((t.kind, t.change), (kind, change));
                assert_eq!(topic(t.event_no), Some(t));
            }
        }
        assert_eq!(topic_for(ResourceKind::Order, Change::Updated).event_no, 90024);
        assert_eq!(topic(90025).map(|t| t.change), Some(Change::Updated));
        assert_eq!(topic(12345), None);
    }
}
