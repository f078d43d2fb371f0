//! From a delivery (headers and raw body) to the work it asks for, or the
//! [`Rejection`] naming what is wrong. No I/O: nothing here touches Redis or
//! the queue, so bad input cannot leave a trace anywhere.
//!
//! Fields are checked in the order a reader would: the body is JSON, it has
//! an `event_no` the topic table knows (422 otherwise: the request is
//! well-formed, we just do not take that topic), a `resource` object with a
//! usable `mall_id` and the topic's id field, then the `X-Trace-ID` header.
//!
//! The delivery id is `X-Trace-ID` when the sender sent one (Cafe24 repeats
//! it on redelivery), otherwise the SHA-256 of the raw body. The body
//! fallback cannot tell two identical deliveries apart from one delivery
//! sent twice: within the duplicate window, a second identical body is
//! answered `duplicate` (and SQS would drop it too, since its
//! deduplication id would be the same).

use crate::config::TopicTable;
use crate::rejection::{ErrorCode, Rejection};
use axum::http::HeaderMap;
use serde_json::Value;
use sha2::{Digest, Sha256};
use sluice_cafe24::webhook::TRACE_ID_HEADER;
use sluice_cafe24::{WebhookBody, check_mall_id};
use sluice_domain::{ResourceRef, ShopEvent, ShopWork};

/// The header name as senders write it, for error messages.
const TRACE_ID_FIELD: &str = "X-Trace-ID";

/// Reads one webhook delivery.
pub fn parse(
    headers: &HeaderMap,
    body: &[u8],
    topics: &TopicTable,
    received_at_ms: u64,
) -> Result<ShopWork, Rejection> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| Rejection::new(ErrorCode::InvalidJson, format!("the body is not valid JSON: {e}")))?;
    let Value::Object(mut object) = value else {
        return Err(Rejection::new(ErrorCode::InvalidJson, "the body must be a JSON object"));
    };

    let event_no = match object.get("event_no") {
        None => return Err(Rejection::field("event_no", "is missing")),
        Some(n) => n
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| Rejection::field("event_no", "must be a webhook event number (a non-negative integer)"))?,
    };
    let topic = topics.get(event_no).ok_or_else(|| Rejection {
        code: ErrorCode::UnknownTopic,
        message: format!(
            "event_no {event_no} is not in the topic table (accepted: {})",
            topics.event_nos().map(|n| n.to_string()).collect::<Vec<_>>().join(", ")
        ),
        field: Some("event_no".into()),
    })?;
    let resource = match object.remove("resource") {
        Some(Value::Object(resource)) => resource,
        Some(_) => return Err(Rejection::field("resource", "must be an object")),
        None => return Err(Rejection::field("resource", "is missing")),
    };
    let webhook = WebhookBody { event_no, resource };

    let mall_id = webhook.mall_id().map_err(|e| Rejection::from_field_error(&e, e.field))?;
    check_mall_id(mall_id)
        .map_err(|_| Rejection::field("resource.mall_id", "must be letters, digits, '-' or '_' (a Cafe24 mall id)"))?;
    let id_path = topic.resource().webhook_id_path;
    let resource_id = webhook.resource_id(topic).map_err(|e| Rejection::from_field_error(&e, e.field))?;

    let delivery_id = match trace_id(headers)? {
        Some(id) => id.to_owned(),
        None => hex::encode(Sha256::digest(body)),
    };
    let event = ShopEvent::new(mall_id, topic.topic(), ResourceRef { kind: topic.kind, id: resource_id }, delivery_id)
        .map_err(|e| {
            // Name the field as the sender wrote it, not as the domain
            // calls it.
            let field = match e.field {
                "mall_id" => "resource.mall_id",
                "resource.id" => id_path,
                _ => TRACE_ID_FIELD,
            };
            Rejection::from_field_error(&e, field)
        })?;
    Ok(ShopWork::new(event, received_at_ms))
}

/// `X-Trace-ID`, if sent: once, as text. Its content is checked like any id
/// when the event is built.
fn trace_id(headers: &HeaderMap) -> Result<Option<&str>, Rejection> {
    let mut values = headers.get_all(TRACE_ID_HEADER).iter();
    let Some(value) = values.next() else { return Ok(None) };
    if values.next().is_some() {
        return Err(Rejection::field(TRACE_ID_FIELD, "must be sent once"));
    }
    value.to_str().map(Some).map_err(|_| Rejection::field(TRACE_ID_FIELD, "must be visible ASCII"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use serde_json::json;

    fn parse_json(body: &Value, trace: Option<&str>) -> Result<ShopWork, Rejection> {
        let mut headers = HeaderMap::new();
        if let Some(t) = trace {
            headers.insert(TRACE_ID_HEADER, HeaderValue::from_str(t).unwrap());
        }
        parse(&headers, body.to_string().as_bytes(), &TopicTable::default(), 1)
    }

    fn failure(body: Value) -> (ErrorCode, Option<String>) {
        let r = parse_json(&body, Some("t-1")).unwrap_err();
        (r.code, r.field)
    }

    #[test]
    fn a_product_webhook_becomes_its_work() {
        let body = json!({"event_no": 90002, "resource": {"mall_id": "acme", "product_no": 17, "event_shop_no": "1"}});
        let work = parse_json(&body, Some("trace-9")).unwrap();
        assert_eq!(work.event.mall_id, "acme");
        assert_eq!(work.event.topic.0, 90002);
        assert_eq!(work.event.delivery_id, "trace-9");
        assert_eq!(work.resource_gate(), "product:17");
        assert_eq!(work.event_id, "s:acme:90002:product:17:trace-9");
    }

    #[test]
    fn without_a_trace_id_the_delivery_is_the_bodys_digest() {
        let text = r#"{"event_no":90023,"resource":{"mall_id":"acme","order_id":"20250101-01"}}"#;
        let work = parse(&HeaderMap::new(), text.as_bytes(), &TopicTable::default(), 1).unwrap();
        assert_eq!(work.event.delivery_id, hex::encode(Sha256::digest(text.as_bytes())));
        assert_eq!(work.resource_gate(), "order:20250101-01");
    }

    #[test]
    fn each_bad_field_is_named() {
        let field = |f: &str| (ErrorCode::InvalidField, Some(f.to_owned()));
        assert_eq!(failure(json!({"resource": {}})), field("event_no"));
        assert_eq!(failure(json!({"event_no": "90001", "resource": {}})), field("event_no"));
        assert_eq!(failure(json!({"event_no": -1, "resource": {}})), field("event_no"));
        assert_eq!(failure(json!({"event_no": 1, "resource": {}})), (ErrorCode::UnknownTopic, Some("event_no".into())));
        assert_eq!(failure(json!({"event_no": 90001})), field("resource"));
        assert_eq!(failure(json!({"event_no": 90001, "resource": []})), field("resource"));
        assert_eq!(failure(json!({"event_no": 90001, "resource": {"product_no": 1}})), field("resource.mall_id"));
        assert_eq!(
            failure(json!({"event_no": 90001, "resource": {"mall_id": "a.b", "product_no": 1}})),
            field("resource.mall_id")
        );
        assert_eq!(failure(json!({"event_no": 90001, "resource": {"mall_id": "a"}})), field("resource.product_no"));
        assert_eq!(
            failure(json!({"event_no": 90001, "resource": {"mall_id": "a", "product_no": 1.5}})),
            field("resource.product_no")
        );
        assert_eq!(
            failure(json!({"event_no": 90024, "resource": {"mall_id": "a", "order_id": "x".repeat(300)}})),
            field("resource.order_id")
        );
        assert_eq!(
            failure(json!({"event_no": 90080, "resource": {"mall_id": "a", "member_id": ""}})),
            field("resource.member_id")
        );
    }

    #[test]
    fn a_bad_trace_id_is_named_as_the_header() {
        let body = json!({"event_no": 90001, "resource": {"mall_id": "a", "product_no": 1}});
        for bad in ["x".repeat(257), "a\tb".to_owned()] {
            let r = parse_json(&body, Some(&bad)).unwrap_err();
            assert_eq!(r.field.as_deref(), Some("X-Trace-ID"), "{bad:?}");
        }
        let mut headers = HeaderMap::new();
        headers.append(TRACE_ID_HEADER, HeaderValue::from_static("a"));
        headers.append(TRACE_ID_HEADER, HeaderValue::from_static("b"));
        let r = parse(&headers, body.to_string().as_bytes(), &TopicTable::default(), 1).unwrap_err();
        assert_eq!(r.message, "field `X-Trace-ID` must be sent once");
    }

    #[test]
    fn not_json_or_not_an_object_is_invalid_json() {
        for body in ["{", "[1]", "\"text\"", ""] {
            let r = parse(&HeaderMap::new(), body.as_bytes(), &TopicTable::default(), 1).unwrap_err();
            assert_eq!((r.code, r.field), (ErrorCode::InvalidJson, None), "{body:?}");
        }
    }
}
