//! Changing a mall's data the way a merchant would in Cafe24's admin, and
//! sending the webhook Cafe24 would send for it.
//!
//! The change is applied under the lock (so versions are assigned in a
//! single order); the webhook is posted after the lock is released, so
//! concurrent changes may reach the receiver out of order, as they can from
//! Cafe24.

use crate::cafe24::SandboxError;
use crate::cafe24::state::{Shared, wall_now};
use crate::cafe24::store::Applied;
use crate::cafe24::webhook::{WebhookDelivery, deliver};
use serde::Serialize;
use serde_json::{Map, Value};
use sluice_cafe24::{Change, WebhookBody, topic_for};
use sluice_domain::ResourceKind;

/// A change to make.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Edit {
    Create(Map<String, Value>),
    Update(String, Map<String, Value>),
    Delete(String),
}

/// What a change did, and how its webhook went.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChangeReport {
    pub mall_id: String,
    pub kind: ResourceKind,
    pub id: String,
    pub change: Change,
    /// The resource's `sandbox_version` after the change.
    pub version: u64,
    pub updated_date: String,
    /// `None` when no webhook target is configured.
    pub webhook: Option<WebhookDelivery>,
}

pub(crate) async fn apply(
    shared: &Shared,
    mall_id: &str,
    kind: ResourceKind,
    edit: Edit,
) -> Result<ChangeReport, SandboxError> {
    let (applied, target) = {
        let mut inner = shared.lock();
        let target = inner.webhook.clone();
        let store = &mut inner.mall_mut(mall_id)?.store;
        let now = wall_now();
        let applied = match edit {
            Edit::Create(fields) => store.create(kind, fields, now)?,
            Edit::Update(id, fields) => store.update(kind, &id, fields, now)?,
            Edit::Delete(id) => store.delete(kind, &id, now)?,
        };
        (applied, target)
    };
    let Applied { id, change, version, updated_date, body } = applied;
    let webhook = match target {
        Some(target) => {
            // A deletion's webhook names the resource only; the others carry
            // a snapshot, as Cafe24's do.
            let extra = if change == Change::Deleted { Map::new() } else { body };
            let body = WebhookBody::new(topic_for(kind, change), mall_id, &id, &extra);
            // A new trace id: unique per delivery.
            let delivery = deliver(&shared.http, &target, body, uuid::Uuid::new_v4().to_string()).await;
            count(shared, &delivery);
            Some(delivery)
        }
        None => None,
    };
    Ok(ChangeReport { mall_id: mall_id.to_owned(), kind, id, change, version, updated_date, webhook })
}

/// Posts an earlier delivery again, same body and trace id, to the current
/// target (a redelivery, as Cafe24 retries).
pub(crate) async fn resend(shared: &Shared, delivery: &WebhookDelivery) -> Result<WebhookDelivery, SandboxError> {
    let target = shared.lock().webhook.clone();
    let target = target.ok_or_else(|| SandboxError::InvalidInput("no webhook target is configured".into()))?;
    let again = deliver(&shared.http, &target, delivery.body.clone(), delivery.trace_id.clone()).await;
    count(shared, &again);
    Ok(again)
}

fn count(shared: &Shared, delivery: &WebhookDelivery) {
    let mut inner = shared.lock();
    let counters = &mut inner.log.counters;
    counters.webhooks_sent += 1;
    if !delivery.delivered() {
        counters.webhooks_failed += 1;
    }
}
