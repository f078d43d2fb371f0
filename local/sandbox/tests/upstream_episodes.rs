//! The faults the upstream chaos test switches on over HTTP: a Cafe24
//! mall's 429 storm, its revoked tokens, connections closed before any
//! answer, and the Sheets sandbox's probabilistic plan.

use serde_json::{Map, Value, json};
use sluice_cafe24::{FetchOutcome, RefreshError, Secret};
use sluice_domain::ResourceKind;
use sluice_sandbox::cafe24::SandboxConfig;
use sluice_sandbox::{Cafe24Sandbox, FaultConfig, SheetsSandbox, SheetsSandboxConfig, TimeoutMode};
use sluice_testkit::sandbox::cafe24_client;
use std::time::{Duration, Instant};

async fn post(url: String, body: Value) -> Value {
    let response = sluice_http::client().post(url).json(&body).send().await.unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    response.json().await.unwrap()
}

#[tokio::test]
async fn a_storm_answers_429_with_retry_after_until_it_ends_and_other_malls_are_spared() {
    tokio::time::timeout(Duration::from_secs(20), async {
        let sandbox = Cafe24Sandbox::start(SandboxConfig::with_malls(["acme", "calm"])).await.unwrap();
        let client = cafe24_client(&sandbox);
        let mut fetch = Vec::new();
        for mall in ["acme", "calm"] {
            let id = sandbox.create(mall, ResourceKind::Product, Map::new()).await.unwrap().id;
            fetch.push((mall, id, sandbox.issue_tokens(mall).unwrap().access_token));
        }
        let storm = json!({"millis": 300, "retry_after_secs": 2});
        post(format!("{}/sandbox/malls/acme/storm", sandbox.base_url()), storm).await;
        let ends = Instant::now() + Duration::from_millis(300);
        let (mall, id, token) = &fetch[0];
        let outcome = client.fetch(mall, ResourceKind::Product, id, token).await;
        let FetchOutcome::Throttled { retry_after, .. } = outcome else { panic!("{outcome:?}") };
        assert_eq!(retry_after, Some(Duration::from_secs(2)));
        let (calm, calm_id, calm_token) = &fetch[1];
        let spared = client.fetch(calm, ResourceKind::Product, calm_id, calm_token).await;
        assert!(matches!(spared, FetchOutcome::Found(_)), "{spared:?}");
        // Over by the sandbox's clock: the next call is answered.
        tokio::time::sleep_until(ends.into()).await;
        let after = client.fetch(mall, ResourceKind::Product, id, token).await;
        assert!(matches!(after, FetchOutcome::Found(_)), "{after:?}");
        let counters = sandbox.counters();
        assert_eq!((counters.refused_storm, counters.refused_bucket, counters.ok), (1, 0, 2));
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn revoked_tokens_get_401_and_their_refresh_invalid_grant_until_new_ones_are_issued() {
    tokio::time::timeout(Duration::from_secs(20), async {
        let sandbox = Cafe24Sandbox::start(SandboxConfig::with_malls(["acme"])).await.unwrap();
        let client = cafe24_client(&sandbox);
        let id = sandbox.create("acme", ResourceKind::Product, Map::new()).await.unwrap().id;
        let grant = sandbox.issue_tokens("acme").unwrap();
        post(format!("{}/sandbox/malls/acme/tokens/revoke", sandbox.base_url()), json!({})).await;
        let outcome = client.fetch("acme", ResourceKind::Product, &id, &grant.access_token).await;
        assert!(matches!(outcome, FetchOutcome::Unauthorized { .. }), "{outcome:?}");
        let refused = client.refresh("acme", &grant.refresh_token).await.unwrap_err();
        assert!(matches!(&refused, RefreshError::Rejected { error: Some(e), .. } if e.error == "invalid_grant"));
        let fresh = sandbox.issue_tokens("acme").unwrap();
        let outcome = client.fetch("acme", ResourceKind::Product, &id, &Secret::new(fresh.access_token.expose())).await;
        assert!(matches!(outcome, FetchOutcome::Found(_)), "{outcome:?}");
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn the_sheets_plan_is_set_over_http_and_read_back() {
    tokio::time::timeout(Duration::from_secs(20), async {
        let sandbox = SheetsSandbox::start(SheetsSandboxConfig::default()).await.unwrap();
        let url = format!("{}/sandbox/sheets/plan", sandbox.base_url());
        let http = sluice_http::client();
        let set = http.put(&url).json(&json!({"server_error_rate": 0.2, "seed": 9})).send().await.unwrap();
        assert!(set.status().is_success());
        let plan: Value = http.get(&url).send().await.unwrap().json().await.unwrap();
        assert_eq!((plan["server_error_rate"].as_f64(), plan["seed"].as_u64()), (Some(0.2), Some(9)));
        let bad = http.put(&url).json(&json!({"server_error_rate": 2.0})).send().await.unwrap();
        assert_eq!(bad.status(), 400);
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_closed_connection_ends_before_any_answer_and_the_next_call_is_answered() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    tokio::time::timeout(Duration::from_secs(20), async {
        let sandbox = Cafe24Sandbox::start(SandboxConfig::with_malls(["acme"])).await.unwrap();
        let id = sandbox.create("acme", ResourceKind::Product, Map::new()).await.unwrap().id;
        let token = sandbox.issue_tokens("acme").unwrap().access_token;
        let close = FaultConfig { timeout_rate: 1.0, timeout_mode: TimeoutMode::Close, ..FaultConfig::default() };
        put_faults(&sandbox, &close).await;
        let mut socket = tokio::net::TcpStream::connect(sandbox.addr()).await.unwrap();
        let request = format!(
            "GET /malls/acme/api/v2/admin/products/{id} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {}\r\n\r\n",
            token.expose()
        );
        socket.write_all(request.as_bytes()).await.unwrap();
        let mut answer = Vec::new();
        // EOF or a reset: either way, not one byte of an answer.
        let _ = socket.read_to_end(&mut answer).await;
        assert!(answer.is_empty(), "{:?}", String::from_utf8_lossy(&answer));
        assert_eq!(sandbox.counters().dropped_connections, 1);

        let client = cafe24_client(&sandbox);
        let outcome = client.fetch("acme", ResourceKind::Product, &id, &token).await;
        assert!(matches!(outcome, FetchOutcome::Unavailable { .. }), "{outcome:?}");
        put_faults(&sandbox, &FaultConfig::default()).await;
        let outcome = client.fetch("acme", ResourceKind::Product, &id, &token).await;
        assert!(matches!(outcome, FetchOutcome::Found(_)), "{outcome:?}");
    })
    .await
    .unwrap();
}

/// `PUT /sandbox/faults`, as `sluice sandbox cafe24` users switch them.
async fn put_faults(sandbox: &Cafe24Sandbox, faults: &FaultConfig) {
    let url = format!("{}/sandbox/faults", sandbox.base_url());
    let response = sluice_http::client().put(url).json(faults).send().await.unwrap();
    assert!(response.status().is_success(), "{}", response.status());
}
