//! An HTTP request as API Gateway's HTTP API hands it to a Lambda
//! (payload format 2.0), and the function's answer back as HTTP. See
//! <https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html>.
//!
//! Headers arrive lower-cased, repeated ones joined with commas; cookies
//! move from the `cookie` header to `cookies`; the query string stays raw
//! in `rawQueryString` and is decoded into `queryStringParameters`. A body
//! is always sent base64-encoded with `isBase64Encoded: true`, as API
//! Gateway does for content it does not treat as text, so the function's
//! decoding is what every request exercises.

use axum::http::{HeaderMap, Method, StatusCode, Uri};
use base64::prelude::{BASE64_STANDARD, Engine};
use serde_json::{Map, Value, json};
use std::time::{SystemTime, UNIX_EPOCH};

/// The API's id in `requestContext` and the `Host` it answers for.
pub const API_ID: &str = "local";

/// One request's facts that are not in the request itself.
#[derive(Debug, Clone)]
pub struct RequestFacts {
    /// `POST /webhooks/cafe24`, or `$default`.
    pub route_key: String,
    pub request_id: String,
    pub source_ip: String,
    pub at: SystemTime,
}

/// The payload format 2.0 event for one request.
pub fn request_event(method: &Method, uri: &Uri, headers: &HeaderMap, body: &[u8], facts: &RequestFacts) -> Value {
    let mut joined: Map<String, Value> = Map::new();
    let mut cookies: Vec<Value> = Vec::new();
    for (name, value) in headers {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        if name.as_str() == "cookie" {
            cookies
                .extend(value.split(';').map(str::trim).filter(|c| !c.is_empty()).map(|c| Value::String(c.to_owned())));
            continue;
        }
        join(&mut joined, name.as_str().to_owned(), value);
    }
    let user_agent = joined.get("user-agent").cloned().unwrap_or(Value::String(String::new()));
    let host = joined.get("host").and_then(Value::as_str).unwrap_or("127.0.0.1").to_owned();
    let epoch_ms = facts.at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
    let time = chrono::DateTime::from_timestamp_millis(epoch_ms)
        .map(|t| t.format("%d/%b/%Y:%H:%M:%S +0000").to_string())
        .unwrap_or_default();
    let mut event = json!({
        "version": "2.0",
        "routeKey": facts.route_key,
        "rawPath": uri.path(),
        "rawQueryString": uri.query().unwrap_or(""),
        "headers": joined,
        "requestContext": {
            "accountId": crate::bindings::LOCAL_ACCOUNT,
            "apiId": API_ID,
            "domainName": host,
            "domainPrefix": host.split('.').next().unwrap_or(&host),
            "http": {
                "method": method.as_str(),
                "path": uri.path(),
                "protocol": "HTTP/1.1",
                "sourceIp": facts.source_ip,
                "userAgent": user_agent,
            },
            "requestId": facts.request_id,
            "routeKey": facts.route_key,
            "stage": "$default",
            "time": time,
            "timeEpoch": epoch_ms,
        },
        "isBase64Encoded": !body.is_empty(),
    });
    if !cookies.is_empty() {
        event["cookies"] = Value::Array(cookies);
    }
    if let Some(query) = uri.query().filter(|q| !q.is_empty()) {
        event["queryStringParameters"] = Value::Object(query_parameters(query));
    }
    if !body.is_empty() {
        event["body"] = Value::String(BASE64_STANDARD.encode(body));
    }
    event
}

/// `a=1&a=2&b` → `{"a": "1,2", "b": ""}`, percent-decoded.
fn query_parameters(query: &str) -> Map<String, Value> {
    let mut out: Map<String, Value> = Map::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let decode =
            |s: &str| percent_encoding::percent_decode_str(&s.replace('+', " ")).decode_utf8_lossy().into_owned();
        join(&mut out, decode(key), decode(value));
    }
    out
}

/// Adds `value` under `key`, after a comma when `key` is there already.
fn join(map: &mut Map<String, Value>, key: String, value: String) {
    match map.get_mut(&key) {
        Some(Value::String(previous)) => *previous = format!("{previous},{value}"),
        _ => {
            map.insert(key, Value::String(value));
        }
    }
}

/// A function's answer as HTTP: status, headers (each cookie a
/// `set-cookie`), body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpAnswer {
    pub status: StatusCode,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// Reads the function's response. Without a `statusCode`, API Gateway
/// takes a JSON answer as the body of a 200 `application/json`; anything it
/// cannot read is its 500 `Internal Server Error`.
pub fn http_answer(payload: &[u8]) -> HttpAnswer {
    let Ok(response) = serde_json::from_slice::<Value>(payload) else {
        return gateway_error(StatusCode::INTERNAL_SERVER_ERROR);
    };
    let Some(status) = response.get("statusCode") else {
        let headers = vec![("content-type".to_owned(), "application/json".to_owned())];
        return HttpAnswer { status: StatusCode::OK, headers, body: payload.to_vec() };
    };
    let Some(status) = status.as_u64().and_then(|s| StatusCode::from_u16(s as u16).ok()) else {
        return gateway_error(StatusCode::INTERNAL_SERVER_ERROR);
    };
    let cookies = response["cookies"].as_array().into_iter().flatten().filter_map(Value::as_str);
    let headers = response["headers"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.as_str().map_or_else(|| v.to_string(), str::to_owned)))
        .chain(cookies.map(|cookie| ("set-cookie".to_owned(), cookie.to_owned())))
        .collect();
    let text = response["body"].as_str().unwrap_or_default();
    let body = if response["isBase64Encoded"] == true { BASE64_STANDARD.decode(text) } else { Ok(text.into()) };
    let Ok(body) = body else { return gateway_error(StatusCode::INTERNAL_SERVER_ERROR) };
    HttpAnswer { status, headers, body }
}

/// API Gateway's own answer: `{"message": "Internal Server Error"}` and the like.
pub fn gateway_error(status: StatusCode) -> HttpAnswer {
    let message = status.canonical_reason().unwrap_or("Error");
    HttpAnswer {
        status,
        headers: vec![("content-type".to_owned(), "application/json".to_owned())],
        body: json!({"message": message}).to_string().into_bytes(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> RequestFacts {
        RequestFacts {
            route_key: "POST /webhooks/cafe24".into(),
            request_id: "r-1".into(),
            source_ip: "127.0.0.1".into(),
            at: UNIX_EPOCH + std::time::Duration::from_millis(1_773_120_600_000),
        }
    }

    #[test]
    fn a_request_becomes_a_version_2_event() {
        let mut headers = HeaderMap::new();
        headers.insert("X-Api-Key", "k".parse().unwrap());
        headers.append("x-multi", "a".parse().unwrap());
        headers.append("x-multi", "b".parse().unwrap());
        headers.insert("cookie", "s=1; t=2".parse().unwrap());
        let uri: Uri = "/webhooks/cafe24?a=1&a=2&b=x%20y".parse().unwrap();
        let event = request_event(&Method::POST, &uri, &headers, b"{}", &facts());
        assert_eq!(event["version"], "2.0");
        assert_eq!(event["routeKey"], "POST /webhooks/cafe24");
        assert_eq!(event["rawPath"], "/webhooks/cafe24");
        assert_eq!(event["rawQueryString"], "a=1&a=2&b=x%20y");
        assert_eq!(event["queryStringParameters"], json!({"a": "1,2", "b": "x y"}));
        assert_eq!(event["headers"], json!({"x-api-key": "k", "x-multi": "a,b"}));
        assert_eq!(event["cookies"], json!(["s=1", "t=2"]));
        assert_eq!(event["requestContext"]["http"]["method"], "POST");
        assert_eq!(event["requestContext"]["http"]["sourceIp"], "127.0.0.1");
        assert_eq!(event["requestContext"]["time"], "10/Mar/2026:05:30:00 +0000");
        assert_eq!((event["body"].as_str(), event["isBase64Encoded"].as_bool()), (Some("e30="), Some(true)));
        let empty = request_event(&Method::GET, &"/health".parse().unwrap(), &HeaderMap::new(), b"", &facts());
        assert_eq!((empty.get("body"), empty["isBase64Encoded"].as_bool()), (None, Some(false)));
    }

    #[test]
    fn a_version_2_response_becomes_http() {
        let payload = json!({"statusCode": 202, "headers": {"content-type": "application/json"},
            "cookies": ["a=1"], "body": "eyJvayI6MX0=", "isBase64Encoded": true});
        let answer = http_answer(payload.to_string().as_bytes());
        assert_eq!(answer.status, StatusCode::ACCEPTED);
        assert!(answer.headers.contains(&("set-cookie".into(), "a=1".into())));
        assert_eq!(answer.body, br#"{"ok":1}"#);
        let bare = http_answer(br#"{"ok":true}"#);
        assert_eq!((bare.status, bare.body.as_slice()), (StatusCode::OK, br#"{"ok":true}"#.as_slice()));
        assert_eq!(http_answer(b"not json").status, StatusCode::INTERNAL_SERVER_ERROR);
    }
}
