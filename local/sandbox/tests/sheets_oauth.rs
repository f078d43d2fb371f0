//! The Sheets sandbox's OAuth over real HTTP: the refresh grant, client
//! authentication, access token expiry (by lifetime and on demand),
//! revocation, and the 401s the API answers.

use crate::sheets_support;

use base64::Engine;
use serde_json::json;
use sheets_support::{CLIENT_ID, CLIENT_SECRET, Fixture, USER, bounded};
use sluice_sandbox::{SheetsOp, SheetsSandboxConfig};
use std::time::Duration;

#[tokio::test]
async fn a_refresh_grants_a_bearer_token_that_the_api_accepts() {
    bounded(async {
        let f = Fixture::with_defaults().await;
        let reply = f.refresh(&f.refresh_token).await;
        assert_eq!(reply.status, 200, "{:?}", reply.body);
        assert_eq!(reply.body["token_type"], "Bearer");
        assert_eq!(reply.body["expires_in"], 3600);
        assert_eq!(reply.body["scope"], "https://www.googleapis.com/auth/spreadsheets");
        assert!(reply.body.get("refresh_token").is_none(), "Google does not rotate refresh tokens");
        let token = reply.body["access_token"].as_str().unwrap();
        assert_eq!(f.get(token, "Sheet1", "").await.status, 200);
        // The refresh token still works.
        assert_eq!(f.refresh(&f.refresh_token).await.status, 200);
    })
    .await;
}

#[tokio::test]
async fn client_credentials_are_checked_in_the_form_or_basic() {
    bounded(async {
        let f = Fixture::with_defaults().await;
        let reply = f
            .token_request(&[
                ("grant_type", "refresh_token"),
                ("client_id", CLIENT_ID),
                ("client_secret", "sandbox-secreT"),
                ("refresh_token", &f.refresh_token),
            ])
            .await;
        assert_eq!(reply.status, 401);
        assert_eq!(reply.body, json!({"error": "invalid_client", "error_description": "Unauthorized"}));

        let basic = base64::engine::general_purpose::STANDARD.encode(format!("{CLIENT_ID}:{CLIENT_SECRET}"));
        let form = [("grant_type", "refresh_token"), ("refresh_token", f.refresh_token.as_str())];
        let response = f
            .http
            .post(f.sandbox.token_url())
            .header("Authorization", format!("Basic {basic}"))
            .form(&form)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);

        let reply = f
            .token_request(&[("grant_type", "password"), ("client_id", CLIENT_ID), ("client_secret", CLIENT_SECRET)])
            .await;
        assert_eq!((reply.status, reply.body["error"].as_str()), (400, Some("unsupported_grant_type")));
        let reply = f.refresh("1//not-a-token").await;
        assert_eq!((reply.status, reply.body["error"].as_str()), (400, Some("invalid_grant")));

        // A refresh token belongs to its client.
        f.sandbox.add_client("other", "other-secret");
        let form = [("grant_type", "refresh_token"), ("client_id", "other"), ("client_secret", "other-secret")];
        let reply = f.token_request(&[&form[..], &[("refresh_token", f.refresh_token.as_str())]].concat()).await;
        assert_eq!((reply.status, reply.body["error"].as_str()), (401, Some("unauthorized_client")));
    })
    .await;
}

#[tokio::test]
async fn access_tokens_expire_after_their_lifetime() {
    bounded(async {
        let ttl = Duration::from_millis(400);
        let f = Fixture::start(SheetsSandboxConfig { access_token_ttl: ttl, ..SheetsSandboxConfig::default() }).await;
        let status = f.get(&f.access_token, "Sheet1", "").await.status;
        // The token's life on the sandbox's clock: from the refresh that
        // issued it.
        let calls = f.sandbox.calls();
        let expiry = calls.iter().find(|c| c.op == SheetsOp::Token).unwrap().at + ttl;
        assert!(calls.last().unwrap().at < expiry, "the first call came too late to test anything");
        assert_eq!(status, 200);
        tokio::time::sleep(expiry.saturating_sub(f.sandbox.clock())).await;
        let reply = f.get(&f.access_token, "Sheet1", "").await;
        assert_eq!(reply.status, 401);
        assert_eq!(reply.body["error"]["status"], "UNAUTHENTICATED");
        assert!(reply.message().starts_with("Request had invalid authentication credentials."), "{}", reply.message());
        assert_eq!(reply.body["error"]["details"][0]["reason"], "ACCESS_TOKEN_EXPIRED");
        assert!(reply.headers.get("www-authenticate").is_some());
        let fresh = f.access_token_for(&f.refresh_token).await;
        assert_eq!(f.get(&fresh, "Sheet1", "").await.status, 200);
    })
    .await;
}

#[tokio::test]
async fn expiring_on_demand_gives_401_until_the_next_refresh() {
    bounded(async {
        let f = Fixture::with_defaults().await;
        let bob = f.access_token_for(&f.sandbox.add_user(CLIENT_ID, "bob")).await;
        f.sandbox.expire_access_tokens(USER);
        assert_eq!(f.append(&f.access_token, "Sheet1", "RAW", json!([["x"]])).await.status, 401);
        assert_eq!(f.append(&bob, "Sheet1", "RAW", json!([["bob"]])).await.status, 200, "only ann's tokens expired");
        let fresh = f.access_token_for(&f.refresh_token).await;
        assert_eq!(f.append(&fresh, "Sheet1", "RAW", json!([["x"]])).await.status, 200);
    })
    .await;
}

#[tokio::test]
async fn revoked_refresh_tokens_get_invalid_grant() {
    bounded(async {
        let f = Fixture::with_defaults().await;
        f.sandbox.revoke_refresh_tokens(USER);
        let reply = f.refresh(&f.refresh_token).await;
        assert_eq!(reply.status, 400);
        assert_eq!(
            reply.body,
            json!({"error": "invalid_grant", "error_description": "Token has been expired or revoked."})
        );
        // Revoking the grant ended its access tokens too.
        assert_eq!(f.get(&f.access_token, "Sheet1", "").await.status, 401);
        let again = f.sandbox.add_user(CLIENT_ID, USER);
        assert_ne!(again, f.refresh_token);
        let token = f.access_token_for(&again).await;
        assert_eq!(f.get(&token, "Sheet1", "").await.status, 200);
        let refreshes: Vec<(u16, bool)> =
            f.sandbox.calls().iter().filter(|c| c.op == SheetsOp::Token).map(|c| (c.status, c.applied)).collect();
        assert_eq!(refreshes, [(200, true), (400, false), (200, true)]);
    })
    .await;
}

#[tokio::test]
async fn missing_or_unknown_bearer_tokens_get_401_and_do_not_count() {
    bounded(async {
        let f = Fixture::with_defaults().await;
        let response = f.http.get(f.values_url("Sheet1")).send().await.unwrap();
        assert_eq!(response.status(), 401);
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(body["error"]["details"][0]["reason"], "CREDENTIALS_MISSING");
        let reply = f.get("ya29.made-up", "Sheet1", "").await;
        assert_eq!((reply.status, reply.body["error"]["code"].as_u64()), (401, Some(401)));
        let calls = f.sandbox.calls();
        let unauthenticated: Vec<_> = calls.iter().filter(|c| c.status == 401).collect();
        assert_eq!(unauthenticated.len(), 2);
        assert!(unauthenticated.iter().all(|c| !c.counted && c.user.is_none() && !c.applied));
    })
    .await;
}
