//! Every kind of bad input gets its own 4xx with a JSON body naming the
//! problem, and leaves nothing behind: no message, no send call, no Redis
//! key (no gate, no trace).

use crate::support;

use reqwest::StatusCode;
use serde_json::{Value, json};
use sluice_ingest::ErrorCode;
use support::{Harness, KEY, product};

struct Case {
    name: &'static str,
    body: String,
    key: Option<&'static str>,
    trace: Option<String>,
    status: StatusCode,
    code: &'static str,
    field: Option<&'static str>,
}

fn case(name: &'static str, body: Value, status: StatusCode, code: &'static str, field: Option<&'static str>) -> Case {
    Case { name, body: body.to_string(), key: Some(KEY), trace: Some("t-1".into()), status, code, field }
}

fn cases() -> Vec<Case> {
    let bad = StatusCode::BAD_REQUEST;
    let resource = |r: Value| json!({"event_no": 90002, "resource": r});
    vec![
        Case { key: None, ..case("no key", product("acme", 1), StatusCode::UNAUTHORIZED, "unauthorized", None) },
        Case {
            key: Some("test-key-012345678"),
            ..case("a key one character short", product("acme", 1), StatusCode::UNAUTHORIZED, "unauthorized", None)
        },
        Case {
            key: Some(""),
            ..case("an empty key", product("acme", 1), StatusCode::UNAUTHORIZED, "unauthorized", None)
        },
        Case {
            // Wrong key and oversized: the key is checked before the body is read.
            key: Some("wrong"),
            body: "x".repeat(300 * 1024),
            ..case("wrong key, huge body", json!(null), StatusCode::UNAUTHORIZED, "unauthorized", None)
        },
        Case {
            body: format!(
                r#"{{"event_no":90002,"resource":{{"mall_id":"acme","product_no":1,"pad":"{}"}}}}"#,
                "x".repeat(256 * 1024)
            ),
            ..case("a body over 256 KiB", json!(null), StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large", None)
        },
        Case { body: "{\"event_no\": 90002,".into(), ..case("truncated JSON", json!(null), bad, "invalid_json", None) },
        Case { body: "event_no=90002".into(), ..case("a form body", json!(null), bad, "invalid_json", None) },
        case("a JSON array", json!([product("acme", 1)]), bad, "invalid_json", None),
        case(
            "no event_no",
            json!({"resource": {"mall_id": "acme", "product_no": 1}}),
            bad,
            "invalid_field",
            Some("event_no"),
        ),
        case(
            "event_no as text",
            json!({"event_no": "90002", "resource": {"mall_id": "acme", "product_no": 1}}),
            bad,
            "invalid_field",
            Some("event_no"),
        ),
        case(
            "an unknown event_no",
            json!({"event_no": 99999, "resource": {"mall_id": "acme", "product_no": 1}}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "unknown_topic",
            Some("event_no"),
        ),
        case("no resource", json!({"event_no": 90002}), bad, "invalid_field", Some("resource")),
        case(
            "resource not an object",
            json!({"event_no": 90002, "resource": "acme"}),
            bad,
            "invalid_field",
            Some("resource"),
        ),
        case("no mall_id", resource(json!({"product_no": 1})), bad, "invalid_field", Some("resource.mall_id")),
        case(
            "mall_id a number",
            resource(json!({"mall_id": 7, "product_no": 1})),
            bad,
            "invalid_field",
            Some("resource.mall_id"),
        ),
        case(
            "mall_id empty",
            resource(json!({"mall_id": "", "product_no": 1})),
            bad,
            "invalid_field",
            Some("resource.mall_id"),
        ),
        case(
            "mall_id not a mall id",
            resource(json!({"mall_id": "ac/me", "product_no": 1})),
            bad,
            "invalid_field",
            Some("resource.mall_id"),
        ),
        case("no product_no", resource(json!({"mall_id": "acme"})), bad, "invalid_field", Some("resource.product_no")),
        case(
            "product_no negative",
            resource(json!({"mall_id": "acme", "product_no": -3})),
            bad,
            "invalid_field",
            Some("resource.product_no"),
        ),
        case(
            "product_no zero",
            resource(json!({"mall_id": "acme", "product_no": 0})),
            bad,
            "invalid_field",
            Some("resource.product_no"),
        ),
        case(
            "product_no -1",
            resource(json!({"mall_id": "acme", "product_no": -1})),
            bad,
            "invalid_field",
            Some("resource.product_no"),
        ),
        case(
            "product_no zero as text",
            resource(json!({"mall_id": "acme", "product_no": "0"})),
            bad,
            "invalid_field",
            Some("resource.product_no"),
        ),
        case(
            "product_no -1 as text",
            resource(json!({"mall_id": "acme", "product_no": "-1"})),
            bad,
            "invalid_field",
            Some("resource.product_no"),
        ),
        case(
            // The same rule for every kind: an order id is text, but not 0.
            "order_id zero",
            json!({"event_no": 90024, "resource": {"mall_id": "acme", "order_id": 0}}),
            bad,
            "invalid_field",
            Some("resource.order_id"),
        ),
        case(
            "product_no an object",
            resource(json!({"mall_id": "acme", "product_no": {"n": 1}})),
            bad,
            "invalid_field",
            Some("resource.product_no"),
        ),
        case(
            "an order without order_id",
            json!({"event_no": 90024, "resource": {"mall_id": "acme", "product_no": 1}}),
            bad,
            "invalid_field",
            Some("resource.order_id"),
        ),
        case(
            "a member id too long",
            json!({"event_no": 90080, "resource": {"mall_id": "acme", "member_id": "m".repeat(300)}}),
            bad,
            "invalid_field",
            Some("resource.member_id"),
        ),
        Case {
            trace: Some("t".repeat(257)),
            ..case("X-Trace-ID too long", product("acme", 1), bad, "invalid_field", Some("X-Trace-ID"))
        },
        Case {
            trace: Some("a\tb".into()),
            ..case("X-Trace-ID with a tab", product("acme", 1), bad, "invalid_field", Some("X-Trace-ID"))
        },
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bad_input_gets_its_4xx_and_leaves_nothing_behind() {
    let mut h = Harness::start("bad_input").await;
    let cases = cases();
    for c in &cases {
        let (status, answer) = h.post(c.body.clone(), c.key, c.trace.as_deref()).await;
        assert_eq!(status, c.status, "{}: {answer}", c.name);
        let error = &answer["error"];
        assert_eq!(error["code"], c.code, "{}: {answer}", c.name);
        assert!(error["message"].as_str().is_some_and(|m| !m.is_empty()), "{}: {answer}", c.name);
        match c.field {
            Some(field) => {
                assert_eq!(error["field"], field, "{}: {answer}", c.name);
                assert!(error["message"].as_str().unwrap().contains(field), "{}: {answer}", c.name);
            }
            None => assert!(error.get("field").is_none(), "{}: {answer}", c.name),
        }
        assert!(answer.get("event_ids").is_none(), "{}: {answer}", c.name);
    }
    h.shutdown().await;

    assert_eq!(h.queue.control.calls(), 0, "no send call was made");
    assert_eq!(h.visible().await, 0, "nothing was enqueued");
    assert_eq!(h.redis.keys().await, Vec::<String>::new(), "no gate or trace was written");
    let counted = h.ingest.snapshot();
    assert_eq!(counted.received, cases.len() as u64);
    assert_eq!(counted.rejected.total(), cases.len() as u64);
    assert_eq!(counted.rejected[ErrorCode::Unauthorized], 4);
    assert_eq!(counted.rejected[ErrorCode::PayloadTooLarge], 1);
    assert_eq!(counted.rejected[ErrorCode::UnknownTopic], 1);
    assert_eq!(counted.enqueued + counted.coalesced + counted.duplicates, 0);
}

#[tokio::test]
async fn a_topic_outside_a_configured_subset_is_unknown() {
    let h = Harness::start_with("topic_subset", |c| {
        c.topics = sluice_ingest::TopicTable::only(&[90023, 90024]).unwrap();
    })
    .await;
    let (status, answer) = h.send(&product("acme", 1), Some("t-1")).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert_eq!(answer["error"]["message"], "event_no 90002 is not in the topic table (accepted: 90023, 90024)");
    assert_eq!(h.visible().await, 0);
}

#[tokio::test]
async fn a_smaller_configured_limit_is_enforced() {
    let h = Harness::start_with("small_limit", |c| c.max_body_bytes = 64).await;
    let (status, answer) = h.send(&product("a-mall-with-a-rather-long-name", 1), Some("t-1")).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{answer}");
    assert_eq!(answer["error"]["message"], "the body is larger than 64 bytes");
    let (status, _) = h.send(&product("acme", 1), None).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "the same webhook with its event_shop_no is over 64 bytes too");
    let (status, answer) = h.send(&json!({"event_no":90002,"resource":{"mall_id":"a","product_no":1}}), None).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
}

#[tokio::test]
async fn other_routes_and_methods_answer_json_errors() {
    let h = Harness::start("routes").await;
    let get = h.http.get(format!("{}/webhooks/cafe24", h.url)).send().await.unwrap();
    assert_eq!(get.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(get.json::<Value>().await.unwrap()["error"]["code"], "method_not_allowed");
    let other = h.http.post(format!("{}/webhooks/shopify", h.url)).send().await.unwrap();
    assert_eq!(other.status(), StatusCode::NOT_FOUND);
    assert_eq!(other.json::<Value>().await.unwrap()["error"]["code"], "not_found");
    let health = h.http.get(format!("{}/health", h.url)).send().await.unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    assert_eq!(health.json::<Value>().await.unwrap(), json!({"status": "ok"}));
    assert_eq!(h.ingest.snapshot().received, 0, "only webhook requests are counted");
}
