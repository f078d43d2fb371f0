//! One mall's products, orders and customers.
//!
//! Each resource is a JSON object of free-form fields plus what the sandbox
//! manages: the id field (`product_no`, `order_id`, `member_id`),
//! `shop_no`, `created_date`, `updated_date` (Cafe24's
//! `YYYY-MM-DDTHH:MM:SS+09:00`) and `sandbox_version`, a counter that grows
//! by one on every change, deletion included, and survives re-creation.
//!
//! Ids: product numbers count up from 1 per mall; order ids look like
//! Cafe24's (`20250102-0000001`); member ids are the caller's `member_id`
//! or `member{n}`.

use crate::cafe24::SandboxError;
use chrono::{DateTime, FixedOffset};
use serde::Serialize;
use serde_json::{Map, Value};
use sluice_cafe24::resource::{SANDBOX_VERSION_FIELD, UPDATED_DATE_FIELD};
use sluice_cafe24::token::format_resource_time;
use sluice_cafe24::{Change, admin_resource};
use sluice_domain::ResourceKind;
use std::collections::HashMap;

/// Fields only the sandbox sets.
const MANAGED: [&str; 4] = ["shop_no", "created_date", UPDATED_DATE_FIELD, SANDBOX_VERSION_FIELD];

/// A resource as the sandbox holds it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SandboxResource {
    pub kind: ResourceKind,
    pub id: String,
    pub version: u64,
    pub deleted: bool,
    /// The object the Admin API serves (its last state, for a deleted one).
    pub body: Value,
}

/// The result of one change, for the caller and the webhook.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Applied {
    pub(crate) id: String,
    pub(crate) change: Change,
    pub(crate) version: u64,
    pub(crate) updated_date: String,
    /// The served object after the change (before it, for a deletion).
    pub(crate) body: Map<String, Value>,
}

#[derive(Debug, Clone)]
struct Entry {
    fields: Map<String, Value>,
    version: u64,
    deleted: bool,
}

#[derive(Debug, Default)]
pub(crate) struct ResourceStore {
    items: HashMap<(ResourceKind, String), Entry>,
    next_product_no: u64,
    next_order_seq: u64,
    next_member_seq: u64,
}

impl ResourceStore {
    pub(crate) fn create(
        &mut self,
        kind: ResourceKind,
        mut fields: Map<String, Value>,
        now: DateTime<FixedOffset>,
    ) -> Result<Applied, SandboxError> {
        check_fields(&fields, kind, true)?;
        let id_field = admin_resource(kind).id_field;
        let id = match fields.remove(id_field) {
            Some(Value::String(s)) if !s.trim().is_empty() => s,
            Some(Value::Number(n)) if n.is_u64() => n.to_string(),
            Some(_) => return Err(SandboxError::InvalidInput(format!("`{id_field}` must be a string or an integer"))),
            None => self.next_id(kind, now),
        };
        let key = (kind, id.clone());
        let version = match self.items.get(&key) {
            Some(entry) if !entry.deleted => return Err(SandboxError::AlreadyExists { kind, id }),
            Some(entry) => entry.version + 1,
            None => 1,
        };
        let stamp = format_resource_time(now);
        fields.insert("created_date".into(), Value::from(stamp.clone()));
        if kind == ResourceKind::Product && !fields.contains_key("product_code") {
            fields.insert("product_code".into(), Value::from(format!("P{:0>7}", id)));
        }
        fields.insert(UPDATED_DATE_FIELD.into(), Value::from(stamp.clone()));
        self.items.insert(key, Entry { fields, version, deleted: false });
        Ok(self.applied(kind, id, Change::Created, stamp))
    }

    pub(crate) fn update(
        &mut self,
        kind: ResourceKind,
        id: &str,
        changes: Map<String, Value>,
        now: DateTime<FixedOffset>,
    ) -> Result<Applied, SandboxError> {
        check_fields(&changes, kind, false)?;
        let entry = self.live_mut(kind, id)?;
        let stamp = format_resource_time(now);
        entry.fields.extend(changes);
        entry.fields.insert(UPDATED_DATE_FIELD.into(), Value::from(stamp.clone()));
        entry.version += 1;
        Ok(self.applied(kind, id.to_owned(), Change::Updated, stamp))
    }

    pub(crate) fn delete(
        &mut self,
        kind: ResourceKind,
        id: &str,
        now: DateTime<FixedOffset>,
    ) -> Result<Applied, SandboxError> {
        let entry = self.live_mut(kind, id)?;
        entry.deleted = true;
        entry.version += 1;
        Ok(self.applied(kind, id.to_owned(), Change::Deleted, format_resource_time(now)))
    }

    /// The object the Admin API serves, `None` when missing or deleted.
    pub(crate) fn get(&self, kind: ResourceKind, id: &str) -> Option<Map<String, Value>> {
        let entry = self.items.get(&(kind, id.to_owned())).filter(|e| !e.deleted)?;
        Some(served(kind, id, entry))
    }

    pub(crate) fn resource(&self, kind: ResourceKind, id: &str) -> Option<SandboxResource> {
        let entry = self.items.get(&(kind, id.to_owned()))?;
        Some(SandboxResource {
            kind,
            id: id.to_owned(),
            version: entry.version,
            deleted: entry.deleted,
            body: Value::Object(served(kind, id, entry)),
        })
    }

    /// Every resource of a kind, deleted ones included, by id.
    pub(crate) fn list(&self, kind: ResourceKind) -> Vec<SandboxResource> {
        let mut ids: Vec<&String> = self.items.keys().filter(|(k, _)| *k == kind).map(|(_, id)| id).collect();
        ids.sort_by(|a, b| a.len().cmp(&b.len()).then(a.cmp(b)));
        ids.into_iter().filter_map(|id| self.resource(kind, id)).collect()
    }

    fn live_mut(&mut self, kind: ResourceKind, id: &str) -> Result<&mut Entry, SandboxError> {
        match self.items.get_mut(&(kind, id.to_owned())) {
            Some(entry) if !entry.deleted => Ok(entry),
            _ => Err(SandboxError::UnknownResource { kind, id: id.to_owned() }),
        }
    }

    fn applied(&self, kind: ResourceKind, id: String, change: Change, updated_date: String) -> Applied {
        let entry = &self.items[&(kind, id.clone())];
        Applied { body: served(kind, &id, entry), version: entry.version, id, change, updated_date }
    }

    fn next_id(&mut self, kind: ResourceKind, now: DateTime<FixedOffset>) -> String {
        loop {
            let id = match kind {
                ResourceKind::Product => {
                    self.next_product_no += 1;
                    self.next_product_no.to_string()
                }
                ResourceKind::Order => {
                    self.next_order_seq += 1;
                    format!("{}-{:07}", now.format("%Y%m%d"), self.next_order_seq)
                }
                ResourceKind::Customer => {
                    self.next_member_seq += 1;
                    format!("member{}", self.next_member_seq)
                }
            };
            if !self.items.contains_key(&(kind, id.clone())) {
                return id;
            }
        }
    }
}

/// Rejects fields the sandbox manages; the id field only on creation.
fn check_fields(fields: &Map<String, Value>, kind: ResourceKind, creating: bool) -> Result<(), SandboxError> {
    let id_field = admin_resource(kind).id_field;
    let managed = fields.keys().find(|k| MANAGED.contains(&k.as_str()) || (!creating && k.as_str() == id_field));
    match managed {
        Some(field) => Err(SandboxError::InvalidInput(format!("field `{field}` is set by the sandbox"))),
        None => Ok(()),
    }
}

fn served(kind: ResourceKind, id: &str, entry: &Entry) -> Map<String, Value> {
    let id_value = match (kind, id.parse::<u64>()) {
        (ResourceKind::Product, Ok(n)) => Value::from(n),
        _ => Value::from(id),
    };
    let mut body = Map::new();
    body.insert("shop_no".into(), Value::from(1));
    body.insert(admin_resource(kind).id_field.into(), id_value);
    body.extend(entry.fields.clone());
    body.insert(SANDBOX_VERSION_FIELD.into(), Value::from(entry.version));
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use sluice_cafe24::token::parse_cafe24_time;

    fn now() -> DateTime<FixedOffset> {
        parse_cafe24_time("2025-01-02T03:04:05+09:00").unwrap()
    }

    fn fields(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn versions_grow_through_update_delete_and_recreate() {
        let mut store = ResourceStore::default();
        let a = store.create(ResourceKind::Product, fields(json!({"product_name": "Tea"})), now()).unwrap();
        assert_eq!((a.id.as_str(), a.version), ("1", 1));
        assert_eq!(a.body["product_no"], 1);
        assert_eq!(a.body["product_code"], "P0000001");
        assert_eq!(a.body["updated_date"], "2025-01-02T03:04:05+09:00");
        let b = store.update(ResourceKind::Product, "1", fields(json!({"price": "10.00"})), now()).unwrap();
        assert_eq!(b.version, 2);
        assert_eq!(store.get(ResourceKind::Product, "1").unwrap()["price"], "10.00");
        assert_eq!(store.delete(ResourceKind::Product, "1", now()).unwrap().version, 3);
        assert_eq!(store.get(ResourceKind::Product, "1"), None);
        assert!(store.resource(ResourceKind::Product, "1").unwrap().deleted);
        let again = store.create(ResourceKind::Product, fields(json!({"product_no": 1})), now()).unwrap();
        assert_eq!(again.version, 4);
    }

    #[test]
    fn ids_look_like_cafe24s_and_managed_fields_are_refused() {
        let mut store = ResourceStore::default();
        let order = store.create(ResourceKind::Order, Map::new(), now()).unwrap();
        assert_eq!(order.id, "20250102-0000001");
        let member = store.create(ResourceKind::Customer, fields(json!({"member_id": "kim"})), now()).unwrap();
        assert_eq!((member.id.as_str(), &member.body["member_id"]), ("kim", &json!("kim")));
        assert!(matches!(
            store.create(ResourceKind::Customer, fields(json!({"member_id": "kim"})), now()),
            Err(SandboxError::AlreadyExists { .. })
        ));
        let err = store.update(ResourceKind::Customer, "kim", fields(json!({"member_id": "lee"})), now()).unwrap_err();
        assert_eq!(err.to_string(), "invalid input: field `member_id` is set by the sandbox");
        assert!(store.update(ResourceKind::Customer, "nobody", Map::new(), now()).is_err());
        assert!(store.create(ResourceKind::Product, fields(json!({"sandbox_version": 9})), now()).is_err());
    }
}
