//! The `/sandbox/…` control plane over HTTP, as `sluice sandbox cafe24`
//! users drive it.

use reqwest::StatusCode;
use serde_json::{Value, json};
use sluice_cafe24::{FetchOutcome, Secret};
use sluice_domain::ResourceKind;
use sluice_sandbox::Cafe24Sandbox;
use sluice_sandbox::cafe24::{SandboxConfig, WebhookTarget};
use sluice_testkit::sandbox::cafe24_client;
use std::time::Duration;

async fn call(method: reqwest::Method, url: String, body: Option<Value>) -> (StatusCode, Value) {
    let http = sluice_http::client();
    let mut request = http.request(method, url);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn malls_resources_tokens_and_records_over_http() {
    tokio::time::timeout(Duration::from_secs(20), async {
        let sandbox = Cafe24Sandbox::start(SandboxConfig::with_malls(["acme"])).await.unwrap();
        let base = sandbox.base_url();
        let (status, _) = call(reqwest::Method::POST, format!("{base}/sandbox/malls/shop2"), None).await;
        assert_eq!(status, StatusCode::CREATED);
        let bucket = json!({"capacity": 5, "leak_per_sec": 1.0});
        let (status, _) = call(reqwest::Method::PUT, format!("{base}/sandbox/malls/shop2/bucket"), Some(bucket)).await;
        assert_eq!(status, StatusCode::OK);
        let (_, malls) = call(reqwest::Method::GET, format!("{base}/sandbox/malls"), None).await;
        assert_eq!(malls[1]["mall_id"], "shop2");
        assert_eq!(malls[1]["capacity"], 5);

        let url = format!("{base}/sandbox/malls/shop2/resources/products");
        let (status, report) = call(reqwest::Method::POST, url, Some(json!({"product_name": "Tea"}))).await;
        assert_eq!(status, StatusCode::CREATED);
        assert_eq!(
            (report["id"].as_str(), report["change"].as_str(), report["version"].as_u64()),
            (Some("1"), Some("created"), Some(1))
        );
        let url = format!("{base}/sandbox/malls/shop2/resources/products/1");
        let (status, report) = call(reqwest::Method::PUT, url.clone(), Some(json!({"price": "3"}))).await;
        assert_eq!((status, report["version"].as_u64()), (StatusCode::OK, Some(2)));
        let (_, held) = call(reqwest::Method::GET, url, None).await;
        assert_eq!(held["body"]["price"], "3");

        let (status, tokens) = call(reqwest::Method::POST, format!("{base}/sandbox/malls/shop2/tokens"), None).await;
        assert_eq!(status, StatusCode::OK);
        let token = Secret::new(tokens["access_token"].as_str().unwrap());
        assert!(tokens["refresh_token"].is_string() && tokens["expires_at"].is_string());
        let client = cafe24_client(&sandbox);
        let outcome = client.fetch("shop2", ResourceKind::Product, "1", &token).await;
        assert!(matches!(outcome, FetchOutcome::Found(_)), "{outcome:?}");
        let (status, _) = call(reqwest::Method::POST, format!("{base}/sandbox/malls/shop2/tokens/expire"), None).await;
        assert_eq!(status, StatusCode::OK);
        let outcome = client.fetch("shop2", ResourceKind::Product, "1", &token).await;
        assert!(matches!(outcome, FetchOutcome::Unauthorized { .. }), "{outcome:?}");

        let (_, calls) = call(reqwest::Method::GET, format!("{base}/sandbox/calls?after=1"), None).await;
        assert_eq!(calls.as_array().map(Vec::len), Some(1));
        assert_eq!(calls[0]["status"], 401);
        let (_, counters) = call(reqwest::Method::GET, format!("{base}/sandbox/counters"), None).await;
        assert_eq!((counters["ok"].as_u64(), counters["unauthorized"].as_u64()), (Some(1), Some(1)));

        let url = format!("{base}/sandbox/malls/shop2/resources/products/1");
        let (status, report) = call(reqwest::Method::DELETE, url, None).await;
        assert_eq!((status, report["change"].as_str()), (StatusCode::OK, Some("deleted")));
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn bad_requests_get_a_clear_error() {
    tokio::time::timeout(Duration::from_secs(20), async {
        let sandbox = Cafe24Sandbox::start(SandboxConfig::with_malls(["acme"])).await.unwrap();
        let base = sandbox.base_url();
        let cases = [
            (reqwest::Method::PUT, "/sandbox/faults", Some(json!({"server_error_rate": 2})), 400, "server_error_rate"),
            (reqwest::Method::POST, "/sandbox/malls/acme/resources/widgets", Some(json!({})), 400, "widgets"),
            (reqwest::Method::POST, "/sandbox/malls/nope/resources/products", Some(json!({})), 404, "nope"),
            (reqwest::Method::POST, "/sandbox/malls/acme", None, 409, "already exists"),
            (reqwest::Method::POST, "/sandbox/malls/bad%20id", None, 400, "mall id"),
            (reqwest::Method::PUT, "/sandbox/malls/acme/resources/products/9", Some(json!({})), 404, "product `9`"),
            (reqwest::Method::POST, "/sandbox/malls/acme/resources/products", Some(json!([1])), 400, "body"),
        ];
        for (method, path, body, status, names) in cases {
            let (got, answer) = call(method, format!("{base}{path}"), body).await;
            assert_eq!(got.as_u16(), status, "{path}: {answer}");
            let message = answer["error"].as_str().unwrap_or_default();
            assert!(message.contains(names), "{path}: {message}");
        }
        let (status, answer) = call(reqwest::Method::GET, format!("{base}/no/such/path"), None).await;
        assert_eq!((status, answer["error"]["code"].as_u64()), (StatusCode::NOT_FOUND, Some(404)));
        let (status, _) = call(reqwest::Method::GET, format!("{base}/malls/nope/api/v2/admin/products/1"), None).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    })
    .await
    .unwrap();
}

#[test]
fn sandbox_config_debug_hides_secrets() {
    let config = SandboxConfig {
        client_secret: Secret::new("app-secret-value"),
        webhook: Some(WebhookTarget { url: "http://127.0.0.1:1/h".into(), api_key: Secret::new("hook-key-value") }),
        ..SandboxConfig::default()
    };
    let debug = format!("{config:?}");
    assert!(!debug.contains("app-secret-value") && !debug.contains("hook-key-value"), "{debug}");
}
