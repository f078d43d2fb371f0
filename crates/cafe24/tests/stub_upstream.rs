//! Answers the sandbox never gives (403, 422, a mangled 200, odd headers),
//! from a small axum server on 127.0.0.1 that replies with fixed bytes in
//! Cafe24's documented shapes; and a check that no secret reaches `Debug`.

use axum::Router;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::routing::get;
use sluice_cafe24::{
    BaseUrlTemplate, Cafe24Client, Cafe24Config, FetchOutcome, RefreshError, Secret, TokenGrant, TokenResponse,
    Unavailable,
};
use sluice_domain::{ErrorKind, ResourceKind};
use std::time::Duration;

/// Serves `status`, `headers` and `body` for every path, and returns the
/// base URL template pointing at it.
async fn stub(status: u16, headers: &[(&'static str, &'static [u8])], body: &'static str) -> String {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        map.insert(HeaderName::from_static(name), HeaderValue::from_bytes(value).unwrap());
    }
    let status = StatusCode::from_u16(status).unwrap();
    let reply = move || {
        let map = map.clone();
        async move { (status, map, body) }
    };
    let app = Router::new().route("/{*path}", get(reply.clone()).post(reply));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}/m/{{mall_id}}")
}

fn client(template: String) -> Cafe24Client {
    let config = Cafe24Config::new("app", "client-secret-value")
        .with_base_url(BaseUrlTemplate::new(template).unwrap())
        .with_timeouts(Duration::from_secs(5), Duration::from_secs(1));
    Cafe24Client::new(config).unwrap()
}

async fn fetch(template: String) -> FetchOutcome {
    let (client, token) = (client(template), Secret::new("access-token-value"));
    let outcome = client.fetch("acme", ResourceKind::Product, "7", &token);
    tokio::time::timeout(Duration::from_secs(10), outcome).await.unwrap()
}

#[tokio::test]
async fn other_client_errors_are_permanent_with_the_error_body_parsed() {
    let body = r#"{"error":{"code":"422","message":"product_no is invalid","more_info":{"field":"product_no"}}}"#;
    let outcome = fetch(stub(422, &[("x-api-call-limit", b"2/40")], body).await).await;
    let FetchOutcome::Rejected { status: 422, error: Some(e), usage } = &outcome else { panic!("{outcome:?}") };
    assert_eq!((e.code.as_str(), e.message.as_str()), ("422", "product_no is invalid"));
    assert_eq!(e.more_info["field"], "product_no");
    assert_eq!(usage.call_limit.map(|l| l.used), Some(2));
    assert_eq!(outcome.error_kind(), Some(ErrorKind::InvalidRequest));
    assert_eq!(outcome.step_error().unwrap().cause, "rejected with HTTP 422 (422: product_no is invalid)");

    let body = r#"{"error":{"code":403,"message":"No authority to access","more_info":{}}}"#;
    let outcome = fetch(stub(403, &[], body).await).await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::CredentialRejected), "{outcome:?}");

    let outcome = fetch(stub(400, &[], "<html>bad gateway page</html>").await).await;
    assert!(matches!(outcome, FetchOutcome::Rejected { status: 400, error: None, .. }), "{outcome:?}");
}

#[tokio::test]
async fn garbage_headers_are_ignored_and_retry_after_is_read() {
    let headers: &[(&'static str, &'static [u8])] = &[
        ("x-api-call-limit", b"forty"),
        ("x-cafe24-call-usage", b"\xc3\x28"),
        ("x-cafe24-time-remain", b"-5"),
        ("retry-after", b"3"),
    ];
    let outcome = fetch(stub(429, headers, "").await).await;
    let FetchOutcome::Throttled { retry_after, error: None, usage } = &outcome else { panic!("{outcome:?}") };
    assert_eq!(*retry_after, Some(Duration::from_secs(3)));
    assert_eq!((usage.call_limit, usage.call_usage_percent, usage.time_remain), (None, None, None));
}

#[tokio::test]
async fn a_success_without_the_resource_is_an_upstream_fault() {
    let outcome = fetch(stub(200, &[], r#"{"products":[]}"#).await).await;
    let FetchOutcome::Unavailable { cause: Unavailable::InvalidBody(why), usage: Some(_) } = &outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(why, "no `product` object in the response");
    let outcome = fetch(stub(503, &[], r#"{"error":{"code":503,"message":"down"}}"#).await).await;
    assert!(matches!(outcome, FetchOutcome::Unavailable { cause: Unavailable::ServerError { status: 503, .. }, .. }));
}

#[tokio::test]
async fn token_endpoint_answers_map_to_refresh_errors() {
    let refresh = |template: String| async move {
        let (client, token) = (client(template), Secret::new("refresh-token-value"));
        tokio::time::timeout(Duration::from_secs(10), client.refresh("acme", &token)).await.unwrap()
    };
    let ok = r#"{"access_token":"new-access","expires_at":"2030-01-01T00:00:00.000","refresh_token":"new-refresh",
        "refresh_token_expires_at":"2030-01-15T00:00:00.000","mall_id":"acme","scopes":[]}"#;
    let grant = refresh(stub(200, &[], ok).await).await.unwrap();
    assert_eq!(grant.access_token.expose(), "new-access");
    let other_mall = r#"{"access_token":"a","expires_at":"2030-01-01T00:00:00.000","refresh_token":"r","mall_id":"x"}"#;
    let err = refresh(stub(200, &[], other_mall).await).await.unwrap_err();
    assert!(matches!(err, RefreshError::InvalidResponse(_)), "{err:?}");
    let err = refresh(stub(200, &[], "{}").await).await.unwrap_err();
    assert_eq!(err.error_kind(), ErrorKind::UpstreamUnavailable);
    let err = refresh(stub(429, &[("x-cafe24-call-remain", b"9")], "").await).await.unwrap_err();
    assert_eq!(err, RefreshError::Throttled { retry_after: Some(Duration::from_secs(9)) });
    let err = refresh(stub(502, &[], "").await).await.unwrap_err();
    assert!(matches!(err, RefreshError::Unavailable(Unavailable::ServerError { status: 502, .. })));
}

#[test]
fn no_secret_reaches_debug_output() {
    let secrets = ["client-secret-value", "access-token-value", "refresh-token-value"];
    let config = Cafe24Config::new("app", secrets[0]);
    let client = Cafe24Client::new(config.clone()).unwrap();
    let response = TokenResponse {
        access_token: Secret::new(secrets[1]),
        expires_at: "2030-01-01T00:00:00.000".into(),
        refresh_token: Secret::new(secrets[2]),
        refresh_token_expires_at: None,
        client_id: Some("app".into()),
        mall_id: Some("acme".into()),
        user_id: None,
        scopes: vec![],
        issued_at: None,
    };
    let grant = TokenGrant::from_response(response.clone()).unwrap();
    let debug = [
        format!("{config:?}"),
        format!("{client:?}"),
        format!("{response:?}"),
        format!("{grant:?}"),
        format!("{:?}", Secret::new(secrets[1])),
    ];
    for text in &debug {
        for secret in secrets {
            assert!(!text.contains(secret), "{secret} leaked in {text}");
        }
    }
}
