//! A Cafe24 webhook delivery: the body `{"event_no": N, "resource": {…}}`
//! and the headers a receiver reads.
//!
//! Cafe24 posts JSON to the app's endpoint with an `X-API-Key` header the
//! receiver checks and an `X-Trace-ID` that identifies the delivery (a
//! redelivery of the same event carries the same one). The resource object
//! always holds `mall_id` and the id field of the resource (see
//! [`crate::resource`]); product numbers are JSON numbers, order and member
//! ids are strings, so the id is read from either.

use crate::topics::WebhookTopic;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sluice_domain::{FieldError, ResourceKind, check_resource_id};

/// The header a receiver checks against its configured key.
pub const API_KEY_HEADER: &str = "x-api-key";
/// The header identifying one delivery.
pub const TRACE_ID_HEADER: &str = "x-trace-id";

/// A webhook body as Cafe24 sends it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WebhookBody {
    pub event_no: u32,
    pub resource: Map<String, Value>,
}

impl WebhookBody {
    /// The body Cafe24 sends for `topic` about resource `id` of `mall_id`:
    /// `mall_id`, `event_shop_no` (the multi-shop number; 1 is the default
    /// shop) and the id field, then `extra` fields (a snapshot of the
    /// resource, as Cafe24 includes) that do not override those three.
    pub fn new(topic: &WebhookTopic, mall_id: &str, id: &str, extra: &Map<String, Value>) -> Self {
        let id_field = topic.resource().id_field;
        let mut resource = Map::new();
        resource.insert("mall_id".into(), Value::from(mall_id));
        resource.insert("event_shop_no".into(), Value::from("1"));
        let id_value = match (topic.kind, id.parse::<u64>()) {
            (ResourceKind::Product, Ok(n)) => Value::from(n),
            _ => Value::from(id),
        };
        resource.insert(id_field.into(), id_value);
        for (k, v) in extra {
            resource.entry(k.clone()).or_insert_with(|| v.clone());
        }
        Self { event_no: topic.event_no, resource }
    }

    /// `resource.mall_id`, which must be a non-empty string.
    pub fn mall_id(&self) -> Result<&str, FieldError> {
        match self.resource.get("mall_id") {
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(s),
            Some(Value::String(_)) => Err(FieldError::new("resource.mall_id", "must not be empty")),
            Some(_) => Err(FieldError::new("resource.mall_id", "must be a string")),
            None => Err(FieldError::new("resource.mall_id", "is missing")),
        }
    }

    /// The id of the resource `topic` names, as text: a string, or a whole
    /// number (product numbers), either way following the domain's one rule
    /// for resource ids ([`check_resource_id`]: `0` and `-1` are refused for
    /// every kind, as numbers or as text).
    pub fn resource_id(&self, topic: &WebhookTopic) -> Result<String, FieldError> {
        let resource = topic.resource();
        let field = resource.webhook_id_path;
        let id = match self.resource.get(resource.id_field) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) if n.is_i64() || n.is_u64() => n.to_string(),
            Some(_) => return Err(FieldError::new(field, "must be a string or a whole number")),
            None => return Err(FieldError::new(field, "is missing")),
        };
        check_resource_id(topic.kind, field, &id)?;
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topics::topic;
    use serde_json::json;

    #[test]
    fn builds_cafe24s_shape() {
        let extra = json!({"product_name": "Tea", "mall_id": "spoof"}).as_object().unwrap().clone();
        let body = WebhookBody::new(topic(90002).unwrap(), "acme", "17", &extra);
        assert_eq!(
            serde_json::to_value(&body).unwrap(),
            json!({"event_no": 90002, "resource": {
                "mall_id": "acme", "event_shop_no": "1", "product_no": 17, "product_name": "Tea"}})
        );
        let order = WebhookBody::new(topic(90023).unwrap(), "acme", "20250101-0000001", &Map::new());
        assert_eq!(order.resource["order_id"], "20250101-0000001");
    }

    #[test]
    fn reads_ids_of_either_json_type_and_names_bad_fields() {
        let products = topic(90001).unwrap();
        let parse = |v: Value| serde_json::from_value::<WebhookBody>(v).unwrap();
        let body = parse(json!({"event_no": 90001, "resource": {"mall_id": "acme", "product_no": 42}}));
        assert_eq!(body.mall_id().unwrap(), "acme");
        assert_eq!(body.resource_id(products).unwrap(), "42");
        let body = parse(json!({"event_no": 90001, "resource": {"mall_id": "acme", "product_no": "42"}}));
        assert_eq!(body.resource_id(products).unwrap(), "42");
        for (resource, field, problem) in [
            (json!({"product_no": 1}), "resource.mall_id", "is missing"),
            (json!({"mall_id": 7, "product_no": 1}), "resource.mall_id", "must be a string"),
            (json!({"mall_id": " ", "product_no": 1}), "resource.mall_id", "must not be empty"),
        ] {
            let err = parse(json!({"event_no": 90001, "resource": resource})).mall_id().unwrap_err();
            assert_eq!((err.field, err.problem.as_str()), (field, problem));
        }
        let not_positive = "must be a positive whole number (1 or more) when it is a number";
        for (id, problem) in [
            (json!(-1), not_positive),
            (json!(0), not_positive),
            (json!("0"), not_positive),
            (json!(1.5), "must be a string or a whole number"),
            (json!(""), "must not be empty"),
        ] {
            let body = parse(json!({"event_no": 90001, "resource": {"mall_id": "a", "product_no": id}}));
            let err = body.resource_id(products).unwrap_err();
            assert_eq!((err.field, err.problem.as_str()), ("resource.product_no", problem));
        }
        let body = parse(json!({"event_no": 90032, "resource": {"mall_id": "a"}}));
        assert_eq!(body.resource_id(topic(90032).unwrap()).unwrap_err().field, "resource.member_id");
    }
}
