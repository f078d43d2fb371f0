//! The client against the Cafe24 sandbox over real HTTP on 127.0.0.1, one
//! test per outcome.

use serde_json::{Map, Value, json};
use sluice_cafe24::{
    BaseUrlTemplate, Cafe24Client, Cafe24Config, DEFAULT_API_VERSION, FetchOutcome, RefreshError, Secret, Unavailable,
};
use sluice_domain::{ErrorKind, ResourceKind};
use sluice_sandbox::cafe24::{BucketConfig, QuotaConfig, SandboxConfig};
use sluice_sandbox::{Cafe24Sandbox, FaultConfig, TimeoutMode};
use sluice_testkit::sandbox::cafe24_config;
use std::time::Duration;

const MALL: &str = "acme";
/// Every test's own deadline.
const LIMIT: Duration = Duration::from_secs(20);

fn fields(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

async fn sandbox(config: SandboxConfig) -> Cafe24Sandbox {
    Cafe24Sandbox::start(config).await.expect("sandbox starts")
}

fn client_for(sandbox: &Cafe24Sandbox, secret: &str, timeout: Duration) -> Cafe24Client {
    let config = cafe24_config(sandbox).with_timeouts(timeout, Duration::from_secs(1));
    Cafe24Client::new(Cafe24Config { client_secret: Secret::new(secret), ..config }).unwrap()
}

fn client(sandbox: &Cafe24Sandbox) -> Cafe24Client {
    client_for(sandbox, "sandbox-secret", Duration::from_secs(5))
}

async fn with_product(sandbox: &Cafe24Sandbox) -> (String, Secret) {
    let report = sandbox.create(MALL, ResourceKind::Product, fields(json!({"product_name": "Green tea"}))).await;
    let tokens = sandbox.issue_tokens(MALL).unwrap();
    (report.unwrap().id, tokens.access_token)
}

#[tokio::test]
async fn found_returns_the_resource_its_version_and_the_limit_headers() {
    tokio::time::timeout(LIMIT, async {
        let sandbox = sandbox(SandboxConfig::with_malls([MALL])).await;
        let (id, token) = with_product(&sandbox).await;
        sandbox.update(MALL, ResourceKind::Product, &id, fields(json!({"price": "1200.00"}))).await.unwrap();
        let FetchOutcome::Found(found) = client(&sandbox).fetch(MALL, ResourceKind::Product, &id, &token).await else {
            panic!("expected the product");
        };
        assert_eq!(found.resource["product_name"], "Green tea");
        assert_eq!(found.resource["price"], "1200.00");
        assert_eq!(found.resource["product_no"].as_u64(), id.parse().ok());
        assert_eq!(found.version, Some(2));
        assert!(found.updated_date.as_deref().is_some_and(|d| d.ends_with("+09:00")), "{:?}", found.updated_date);
        let limit = found.usage.call_limit.expect("X-Api-Call-Limit");
        assert_eq!((limit.used, limit.capacity), (1, 40));
        assert!(found.usage.call_usage_percent.is_some() && found.usage.time_usage_percent.is_some());
        assert!(!found.usage.quota_exhausted());
        let call = sandbox.calls().pop().unwrap();
        assert_eq!(call.path, format!("/api/v2/admin/products/{id}"));
        assert_eq!(call.api_version.as_deref(), Some(DEFAULT_API_VERSION));
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn orders_and_customers_come_from_their_own_endpoints() {
    tokio::time::timeout(LIMIT, async {
        let sandbox = sandbox(SandboxConfig::with_malls([MALL])).await;
        let token = sandbox.issue_tokens(MALL).unwrap().access_token;
        let order = sandbox.create(MALL, ResourceKind::Order, Map::new()).await.unwrap();
        let member = sandbox.create(MALL, ResourceKind::Customer, fields(json!({"member_id": "kim"}))).await.unwrap();
        let c = client(&sandbox);
        let FetchOutcome::Found(o) = c.fetch(MALL, ResourceKind::Order, &order.id, &token).await else { panic!() };
        assert_eq!(o.resource["order_id"], order.id.as_str());
        let FetchOutcome::Found(m) = c.fetch(MALL, ResourceKind::Customer, &member.id, &token).await else { panic!() };
        assert_eq!(m.resource["member_id"], "kim");
        let paths: Vec<String> = sandbox.calls().into_iter().map(|r| r.path).collect();
        assert_eq!(paths[1], "/api/v2/admin/customersprivacy/kim");
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn missing_and_deleted_resources_are_not_found() {
    tokio::time::timeout(LIMIT, async {
        let sandbox = sandbox(SandboxConfig::with_malls([MALL])).await;
        let (id, token) = with_product(&sandbox).await;
        let c = client(&sandbox);
        let outcome = c.fetch(MALL, ResourceKind::Product, "999", &token).await;
        let FetchOutcome::NotFound { error: Some(error), usage } = &outcome else { panic!("{outcome:?}") };
        assert_eq!(error.code, "404");
        assert!(usage.call_limit.is_some());
        assert_eq!(outcome.error_kind(), Some(ErrorKind::NotFound));
        sandbox.delete(MALL, ResourceKind::Product, &id).await.unwrap();
        let outcome = c.fetch(MALL, ResourceKind::Product, &id, &token).await;
        assert!(matches!(outcome, FetchOutcome::NotFound { .. }), "{outcome:?}");
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn unauthorized_then_refresh_then_success_and_the_old_refresh_token_is_spent() {
    tokio::time::timeout(LIMIT, async {
        let sandbox = sandbox(SandboxConfig::with_malls([MALL])).await;
        let (id, _) = with_product(&sandbox).await;
        let tokens = sandbox.issue_tokens(MALL).unwrap();
        sandbox.expire_access_tokens(MALL).unwrap();
        let c = client(&sandbox);
        let outcome = c.fetch(MALL, ResourceKind::Product, &id, &tokens.access_token).await;
        let FetchOutcome::Unauthorized { error: Some(error), .. } = &outcome else { panic!("{outcome:?}") };
        assert_eq!(error.code, "401");
        assert_eq!(outcome.error_kind(), Some(ErrorKind::Unauthorized));
        // 401s are not counted in the bucket.
        assert_eq!(sandbox.calls().last().unwrap().bucket_after, 0.0);

        let grant = c.refresh(MALL, &tokens.refresh_token).await.expect("refresh works");
        assert_ne!(grant.access_token, tokens.access_token);
        assert_ne!(grant.refresh_token, tokens.refresh_token);
        assert_eq!(grant.mall_id.as_deref(), Some(MALL));
        assert!(grant.refresh_token_expires_at.is_some_and(|r| r > grant.expires_at));
        let outcome = c.fetch(MALL, ResourceKind::Product, &id, &grant.access_token).await;
        assert!(matches!(outcome, FetchOutcome::Found(_)), "{outcome:?}");

        let spent = c.refresh(MALL, &tokens.refresh_token).await.unwrap_err();
        let RefreshError::Rejected { status: 400, error: Some(e) } = &spent else { panic!("{spent:?}") };
        assert_eq!(e.error, "invalid_grant");
        assert_eq!(spent.error_kind(), ErrorKind::CredentialRejected);
        assert_eq!(sandbox.refresh_count(MALL).unwrap(), 1);
        assert_eq!(sandbox.counters().token_refresh_rejections, 1);
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn refresh_with_wrong_client_credentials_is_rejected() {
    tokio::time::timeout(LIMIT, async {
        let sandbox = sandbox(SandboxConfig::with_malls([MALL])).await;
        let tokens = sandbox.issue_tokens(MALL).unwrap();
        let wrong = client_for(&sandbox, "not-the-secret", Duration::from_secs(5));
        let err = wrong.refresh(MALL, &tokens.refresh_token).await.unwrap_err();
        let RefreshError::Rejected { status: 401, error: Some(e) } = &err else { panic!("{err:?}") };
        assert_eq!(e.error, "invalid_client");
        assert!(!err.to_string().contains(tokens.refresh_token.expose()));
        assert_eq!(sandbox.refresh_count(MALL).unwrap(), 0);
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_full_bucket_throttles_with_cafe24s_body_and_headers() {
    tokio::time::timeout(LIMIT, async {
        let config = SandboxConfig { bucket: BucketConfig::new(3, 0.5), ..SandboxConfig::with_malls([MALL]) };
        let sandbox = sandbox(config).await;
        let (id, token) = with_product(&sandbox).await;
        let c = client(&sandbox);
        for _ in 0..3 {
            assert!(matches!(c.fetch(MALL, ResourceKind::Product, &id, &token).await, FetchOutcome::Found(_)));
        }
        let outcome = c.fetch(MALL, ResourceKind::Product, &id, &token).await;
        let FetchOutcome::Throttled { retry_after, error: Some(error), usage } = &outcome else {
            panic!("{outcome:?}")
        };
        assert_eq!(error.code, "429");
        assert_eq!(*retry_after, None, "the bucket sends no Remain header");
        let limit = usage.call_limit.unwrap();
        assert_eq!((limit.used, limit.capacity), (3, 3));
        assert_eq!(outcome.error_kind(), Some(ErrorKind::UpstreamThrottled));
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_spent_usage_quota_says_how_long_to_wait() {
    tokio::time::timeout(LIMIT, async {
        let sandbox = sandbox(SandboxConfig::with_malls([MALL])).await;
        let quota = QuotaConfig { calls_per_window: 2.0, window_secs: 60.0, ..QuotaConfig::default() };
        sandbox.set_quota(MALL, quota).unwrap();
        let (id, token) = with_product(&sandbox).await;
        let c = client(&sandbox);
        let FetchOutcome::Found(first) = c.fetch(MALL, ResourceKind::Product, &id, &token).await else { panic!() };
        assert_eq!(first.usage.call_usage_percent.map(f64::round), Some(50.0));
        let FetchOutcome::Found(second) = c.fetch(MALL, ResourceKind::Product, &id, &token).await else { panic!() };
        assert!(second.usage.quota_exhausted(), "{:?}", second.usage);
        let outcome = c.fetch(MALL, ResourceKind::Product, &id, &token).await;
        let FetchOutcome::Throttled { retry_after: Some(wait), usage, .. } = &outcome else { panic!("{outcome:?}") };
        // Two calls over a 2-per-minute quota: about 30 s until under it.
        assert!((Duration::from_secs(25)..=Duration::from_secs(61)).contains(wait), "{wait:?}");
        assert_eq!(usage.call_remain, Some(*wait));
        assert!(usage.call_usage_percent.is_some_and(|p| p > 100.0));
        assert_eq!(sandbox.counters().refused_quota, 1);
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn server_errors_timeouts_drops_and_dead_hosts_are_retryable() {
    tokio::time::timeout(LIMIT, async {
        let sandbox = sandbox(SandboxConfig::with_malls([MALL])).await;
        let (id, token) = with_product(&sandbox).await;
        let c = client_for(&sandbox, "sandbox-secret", Duration::from_millis(300));

        sandbox.set_faults(FaultConfig { server_error_rate: 1.0, ..FaultConfig::default() }).unwrap();
        let outcome = c.fetch(MALL, ResourceKind::Product, &id, &token).await;
        let FetchOutcome::Unavailable { cause: Unavailable::ServerError { status: 500, error: Some(e) }, usage } =
            &outcome
        else {
            panic!("{outcome:?}")
        };
        assert_eq!(e.code, "500");
        assert!(usage.is_some_and(|u| u.call_limit.is_some()));

        let hold = TimeoutMode::Hold(Duration::from_secs(5));
        sandbox.set_faults(FaultConfig { timeout_rate: 1.0, timeout_mode: hold, ..FaultConfig::default() }).unwrap();
        let outcome = c.fetch(MALL, ResourceKind::Product, &id, &token).await;
        assert!(
            matches!(outcome, FetchOutcome::Unavailable { cause: Unavailable::Timeout, usage: None }),
            "{outcome:?}"
        );

        let drop = TimeoutMode::Drop;
        sandbox.set_faults(FaultConfig { timeout_rate: 1.0, timeout_mode: drop, ..FaultConfig::default() }).unwrap();
        let outcome = c.fetch(MALL, ResourceKind::Product, &id, &token).await;
        assert!(matches!(outcome, FetchOutcome::Unavailable { cause: Unavailable::Body(_), .. }), "{outcome:?}");

        let counters = sandbox.counters();
        assert_eq!((counters.server_errors, counters.timeouts, counters.dropped_connections), (1, 1, 1));

        let dead = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap()
        };
        let config = Cafe24Config::new("sandbox-client", "sandbox-secret")
            .with_base_url(BaseUrlTemplate::new(format!("http://{dead}/malls/{{mall_id}}")).unwrap());
        let outcome = Cafe24Client::new(config).unwrap().fetch(MALL, ResourceKind::Product, &id, &token).await;
        assert!(matches!(outcome, FetchOutcome::Unavailable { cause: Unavailable::Connect(_), .. }), "{outcome:?}");
        assert_eq!(outcome.error_kind(), Some(ErrorKind::UpstreamUnavailable));
        sandbox.set_faults(FaultConfig::default()).unwrap();
        sandbox.stop().await;
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn bad_mall_ids_never_reach_the_network() {
    let sandbox = sandbox(SandboxConfig::with_malls([MALL])).await;
    let outcome = client(&sandbox).fetch("evil.com/x", ResourceKind::Product, "1", &Secret::new("t")).await;
    assert!(matches!(outcome, FetchOutcome::InvalidTarget { .. }), "{outcome:?}");
    assert_eq!(outcome.error_kind(), Some(ErrorKind::InvalidRequest));
    assert!(sandbox.calls().is_empty());
}
