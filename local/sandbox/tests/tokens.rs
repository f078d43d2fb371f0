//! OAuth in the sandbox: expiry by lifetime, rotation on refresh, and what
//! two racing refreshes of one token get.

use serde_json::Map;
use sluice_cafe24::{FetchOutcome, RefreshError};
use sluice_domain::ResourceKind;
use sluice_sandbox::Cafe24Sandbox;
use sluice_sandbox::cafe24::SandboxConfig;
use sluice_testkit::sandbox::cafe24_client as client;
use std::time::{Duration, Instant};

const MALL: &str = "acme";

#[tokio::test]
async fn access_tokens_expire_after_their_lifetime() {
    let lifetime = Duration::from_millis(300);
    let config = SandboxConfig { access_token_lifetime: lifetime, ..SandboxConfig::with_malls([MALL]) };
    tokio::time::timeout(Duration::from_secs(10), async {
        let sandbox = Cafe24Sandbox::start(config).await.unwrap();
        let id = sandbox.create(MALL, ResourceKind::Product, Map::new()).await.unwrap().id;
        let issued = Instant::now();
        let tokens = sandbox.issue_tokens(MALL).unwrap();
        let c = client(&sandbox);
        let outcome = c.fetch(MALL, ResourceKind::Product, &id, &tokens.access_token).await;
        assert!(issued.elapsed() < lifetime, "the first call came too late to test anything");
        assert!(matches!(outcome, FetchOutcome::Found(_)), "{outcome:?}");
        // Wait out the lifetime, measured from before the token was issued.
        tokio::time::sleep((issued + lifetime + Duration::from_millis(20)).saturating_duration_since(Instant::now()))
            .await;
        let outcome = c.fetch(MALL, ResourceKind::Product, &id, &tokens.access_token).await;
        assert!(matches!(outcome, FetchOutcome::Unauthorized { .. }), "{outcome:?}");
        let grant = c.refresh(MALL, &tokens.refresh_token).await.unwrap();
        let outcome = c.fetch(MALL, ResourceKind::Product, &id, &grant.access_token).await;
        assert!(matches!(outcome, FetchOutcome::Found(_)), "{outcome:?}");
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn refresh_tokens_expire_and_reissuing_replaces_them() {
    let lifetime = Duration::from_millis(200);
    let config = SandboxConfig { refresh_token_lifetime: lifetime, ..SandboxConfig::with_malls([MALL]) };
    tokio::time::timeout(Duration::from_secs(10), async {
        let sandbox = Cafe24Sandbox::start(config).await.unwrap();
        let c = client(&sandbox);
        let first = sandbox.issue_tokens(MALL).unwrap();
        let second = sandbox.issue_tokens(MALL).unwrap();
        let err = c.refresh(MALL, &first.refresh_token).await.unwrap_err();
        assert!(matches!(&err, RefreshError::Rejected { status: 400, error: Some(e) } if e.error == "invalid_grant"));
        let issued = Instant::now();
        let third = sandbox.issue_tokens(MALL).unwrap();
        tokio::time::sleep((issued + lifetime + Duration::from_millis(20)).saturating_duration_since(Instant::now()))
            .await;
        let err = c.refresh(MALL, &third.refresh_token).await.unwrap_err();
        let RefreshError::Rejected { error: Some(e), .. } = &err else { panic!("{err:?}") };
        assert_eq!(e.error_description.as_deref(), Some("Validation error: refresh_token has expired"));
        assert!(c.refresh(MALL, &second.refresh_token).await.is_err());
        sandbox.issue_tokens(MALL).unwrap();
        assert_eq!(sandbox.refresh_count(MALL).unwrap(), 0);
        assert_eq!(sandbox.counters().token_refresh_rejections, 3);
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn racing_refreshes_of_one_token_leave_exactly_one_winner() {
    tokio::time::timeout(Duration::from_secs(10), async {
        let sandbox = Cafe24Sandbox::start(SandboxConfig::with_malls([MALL])).await.unwrap();
        let tokens = sandbox.issue_tokens(MALL).unwrap();
        let c = client(&sandbox);
        let results = futures::future::join_all((0..8).map(|_| c.refresh(MALL, &tokens.refresh_token))).await;
        let winners: Vec<_> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
        assert_eq!(winners.len(), 1, "{results:?}");
        assert!(results.iter().filter_map(|r| r.as_ref().err()).all(|e| matches!(e, RefreshError::Rejected { .. })));
        assert_eq!(sandbox.refresh_count(MALL).unwrap(), 1);
        // The winner's refresh token is the live one now.
        let next = c.refresh(MALL, &winners[0].refresh_token).await.unwrap();
        assert_ne!(next.refresh_token, winners[0].refresh_token);
        assert_eq!(sandbox.refresh_count(MALL).unwrap(), 2);
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn tokens_belong_to_one_mall() {
    let sandbox = Cafe24Sandbox::start(SandboxConfig::with_malls(["one", "two"])).await.unwrap();
    let id = sandbox.create("two", ResourceKind::Product, Map::new()).await.unwrap().id;
    let tokens = sandbox.issue_tokens("one").unwrap();
    let c = client(&sandbox);
    let outcome = c.fetch("two", ResourceKind::Product, &id, &tokens.access_token).await;
    assert!(matches!(outcome, FetchOutcome::Unauthorized { .. }), "{outcome:?}");
    assert!(c.refresh("two", &tokens.refresh_token).await.is_err());
    assert!(c.refresh("one", &tokens.refresh_token).await.is_ok());
}
