//! The client's outcomes when the Google Sheets sandbox refuses, throttles,
//! fails or stalls, over real HTTP on 127.0.0.1: each is typed so the flush
//! step knows whether rows may have been written.

use crate::fixture;

use fixture::{CLIENT_SECRET, Fixture, GID, LIMIT, SPREADSHEET, USER, client_for, rows};
use sluice_domain::ErrorKind;
use sluice_sandbox::SheetsSandboxConfig;
use sluice_sandbox::sheets::{SheetsFault, SheetsOp};
use sluice_sheets::{Outcome, Quota, RefreshError, SheetsClient, SheetsConfig, Unavailable, ValueInputOption};
use std::time::Duration;

#[tokio::test]
async fn an_expired_token_is_unauthorized_and_a_refresh_gives_a_working_one() {
    tokio::time::timeout(LIMIT, async {
        let f = Fixture::start().await;
        f.sandbox.expire_access_tokens(USER);
        let outcome = f.client.append(&f.token, SPREADSHEET, GID, &rows(&[&["x"]]), ValueInputOption::Raw).await;
        let Outcome::Unauthorized { error: Some(e) } = &outcome else { panic!("{outcome:?}") };
        assert_eq!((e.code, e.status.as_str()), (401, "UNAUTHENTICATED"));
        assert_eq!(outcome.error_kind(), Some(ErrorKind::Unauthorized));
        let grant = f.client.refresh(&f.refresh_token).await.expect("refresh works");
        assert_ne!(grant.access_token, f.token);
        assert_eq!(grant.refresh_token, None, "Google does not rotate refresh tokens");
        assert!(grant.expires_in > Duration::ZERO);
        let one = rows(&[&["x"]]);
        let retried = f.client.append(&grant.access_token, SPREADSHEET, GID, &one, ValueInputOption::Raw).await;
        assert!(matches!(retried, Outcome::Ok(_)), "{retried:?}");
        assert_eq!(f.sandbox.sheet_values(SPREADSHEET, GID).map(|v| v.len()), Some(1));
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_revoked_refresh_token_is_invalid_grant() {
    tokio::time::timeout(LIMIT, async {
        let f = Fixture::start().await;
        f.sandbox.revoke_refresh_tokens(USER);
        let error = f.client.refresh(&f.refresh_token).await.expect_err("revoked");
        assert!(error.is_invalid_grant(), "{error:?}");
        assert_eq!(error.error_kind(), ErrorKind::CredentialRejected);
        assert!(matches!(error, RefreshError::Rejected { status: 400, .. }));
        assert!(!error.to_string().contains(f.refresh_token.expose()));
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_wrong_client_secret_is_rejected_but_not_invalid_grant() {
    tokio::time::timeout(LIMIT, async {
        let f = Fixture::start().await;
        let wrong = client_for(&f.sandbox, "not-the-secret", Duration::from_secs(5));
        let error = wrong.refresh(&f.refresh_token).await.expect_err("wrong secret");
        let RefreshError::Rejected { status: 401, error: Some(oauth) } = &error else { panic!("{error:?}") };
        assert_eq!(oauth.error, "invalid_client");
        assert!(!error.is_invalid_grant());
        assert!(!format!("{error} {error:?} {wrong:?}").contains("not-the-secret"));
        assert!(!format!("{:?}", f.client).contains(CLIENT_SECRET));
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn the_token_endpoint_failing_is_unavailable() {
    tokio::time::timeout(LIMIT, async {
        let f = Fixture::start().await;
        f.sandbox.inject(SheetsFault::Status { op: SheetsOp::Token, status: 503, times: 1 });
        let error = f.client.refresh(&f.refresh_token).await.expect_err("503");
        assert!(matches!(error, RefreshError::Unavailable(Unavailable::ServerError { status: 503, .. })), "{error:?}");
        assert_eq!(error.error_kind(), ErrorKind::UpstreamUnavailable);
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn the_per_user_write_quota_is_throttled_and_named() {
    tokio::time::timeout(LIMIT, async {
        let config = SheetsSandboxConfig { write_per_user: 2, ..Default::default() };
        let f = Fixture::with(config, Duration::from_secs(5)).await;
        let one = rows(&[&["x"]]);
        let append = || f.client.append(&f.token, SPREADSHEET, GID, &one, ValueInputOption::Raw);
        assert!(append().await.ok().is_some() && append().await.ok().is_some());
        let outcome = append().await;
        let Outcome::Throttled { quota: Some(q), retry_after: None, error: Some(e) } = &outcome else {
            panic!("{outcome:?}")
        };
        assert_eq!((q.quota, q.limit_value), (Some(Quota::WritePerUser), Some(2)));
        assert_eq!((e.code, e.status.as_str()), (429, "RESOURCE_EXHAUSTED"));
        assert_eq!(outcome.error_kind(), Some(ErrorKind::UpstreamThrottled));
        assert_eq!(outcome.to_string(), "throttled by the Sheets quota WriteRequestsPerMinutePerUser");
        assert_eq!(f.sandbox.sheet_values(SPREADSHEET, GID).map(|v| v.len()), Some(2), "the 429 wrote nothing");
        let refused = f.calls(SheetsOp::ValuesAppend).pop().unwrap();
        assert_eq!((refused.status, refused.counted, refused.applied), (429, false, false));
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn an_injected_429_names_a_quota_too() {
    tokio::time::timeout(LIMIT, async {
        let f = Fixture::start().await;
        f.sandbox.inject(SheetsFault::Status { op: SheetsOp::ValuesGet, status: 429, times: 1 });
        let outcome = f.client.get(&f.token, SPREADSHEET, GID, None).await;
        let Outcome::Throttled { quota: Some(q), .. } = &outcome else { panic!("{outcome:?}") };
        assert!(q.quota.is_some_and(|q| !q.is_write()), "a read names a read quota: {q:?}");
        assert!(matches!(f.client.get(&f.token, SPREADSHEET, GID, None).await, Outcome::Ok(_)), "one-shot");
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn an_append_applied_but_timed_out_is_outcome_unknown_and_the_rows_landed() {
    tokio::time::timeout(LIMIT, async {
        let f = Fixture::with(SheetsSandboxConfig::default(), Duration::from_secs(1)).await;
        // Learn the title first so the held call is the append itself.
        assert!(f.client.sheet_title(&f.token, SPREADSHEET, GID).await.ok().is_some());
        f.sandbox.inject(SheetsFault::ApplyThenHold { op: SheetsOp::ValuesAppend, hold: Duration::from_secs(10) });
        let two = rows(&[&["a"], &["b"]]);
        let outcome = f.client.append(&f.token, SPREADSHEET, GID, &two, ValueInputOption::Raw).await;
        assert_eq!(outcome, Outcome::OutcomeUnknown { cause: Unavailable::Timeout });
        assert_eq!(outcome.error_kind(), Some(ErrorKind::OutcomeUnknown));
        let landed = f.sandbox.sheet_values(SPREADSHEET, GID).expect("sheet exists");
        assert_eq!(landed.len(), 2, "applied before the response was held: {landed:?}");
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_get_that_times_out_is_unavailable() {
    tokio::time::timeout(LIMIT, async {
        let f = Fixture::with(SheetsSandboxConfig::default(), Duration::from_secs(1)).await;
        assert!(f.client.sheet_title(&f.token, SPREADSHEET, GID).await.ok().is_some());
        f.sandbox.inject(SheetsFault::ApplyThenHold { op: SheetsOp::ValuesGet, hold: Duration::from_secs(10) });
        let outcome = f.client.get(&f.token, SPREADSHEET, GID, None).await;
        assert_eq!(outcome, Outcome::Unavailable { cause: Unavailable::Timeout });
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_503_is_outcome_unknown_on_append_and_unavailable_on_get() {
    tokio::time::timeout(LIMIT, async {
        let f = Fixture::start().await;
        let one = rows(&[&["x"]]);
        f.sandbox.inject(SheetsFault::Status { op: SheetsOp::ValuesAppend, status: 503, times: 1 });
        let append = f.client.append(&f.token, SPREADSHEET, GID, &one, ValueInputOption::Raw).await;
        let Outcome::OutcomeUnknown { cause: Unavailable::ServerError { status: 503, error: Some(e) } } = &append
        else {
            panic!("{append:?}")
        };
        assert_eq!(e.status, "UNAVAILABLE");
        f.sandbox.inject(SheetsFault::Status { op: SheetsOp::ValuesGet, status: 503, times: 1 });
        let get = f.client.get(&f.token, SPREADSHEET, GID, None).await;
        assert!(matches!(get, Outcome::Unavailable { cause: Unavailable::ServerError { status: 503, .. } }), "{get:?}");
        assert_eq!(get.error_kind(), Some(ErrorKind::UpstreamUnavailable));
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn an_append_applied_then_failed_is_outcome_unknown_and_the_rows_landed() {
    tokio::time::timeout(LIMIT, async {
        let f = Fixture::start().await;
        f.sandbox.inject(SheetsFault::ApplyThenStatus { op: SheetsOp::ValuesAppend, status: 500 });
        let outcome = f.client.append(&f.token, SPREADSHEET, GID, &rows(&[&["x"]]), ValueInputOption::Raw).await;
        assert!(outcome.is_unknown(), "{outcome:?}");
        assert_eq!(f.sandbox.sheet_values(SPREADSHEET, GID).map(|v| v.len()), Some(1));
        let call = f.calls(SheetsOp::ValuesAppend).pop().unwrap();
        assert_eq!((call.status, call.applied), (500, true));
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_failed_title_lookup_is_unavailable_even_for_an_append() {
    tokio::time::timeout(LIMIT, async {
        let f = Fixture::start().await;
        f.sandbox.inject(SheetsFault::Status { op: SheetsOp::SpreadsheetGet, status: 503, times: 1 });
        let outcome = f.client.append(&f.token, SPREADSHEET, GID, &rows(&[&["x"]]), ValueInputOption::Raw).await;
        assert!(matches!(outcome, Outcome::Unavailable { .. }), "nothing was sent to append: {outcome:?}");
        assert!(f.calls(SheetsOp::ValuesAppend).is_empty());
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn nothing_listening_is_unavailable() {
    tokio::time::timeout(LIMIT, async {
        // A port that was just free: nothing listens there. (That a write's
        // connect failure is not `OutcomeUnknown` is checked in `classify`.)
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let base = format!("http://127.0.0.1:{port}");
        let config = SheetsConfig::new("id", "secret")
            .with_api_base_url(&base)
            .and_then(|c| c.with_token_url(format!("{base}/token")))
            .unwrap()
            .with_timeouts(Duration::from_secs(5), Duration::from_secs(1));
        let client = SheetsClient::new(config).unwrap();
        let token = "token".into();
        let outcome = client.append(&token, SPREADSHEET, GID, &rows(&[&["x"]]), ValueInputOption::Raw).await;
        assert!(matches!(outcome, Outcome::Unavailable { cause: Unavailable::Connect(_) }), "{outcome:?}");
        let refresh = client.refresh(&token).await.expect_err("nothing listens");
        assert!(matches!(refresh, RefreshError::Unavailable(Unavailable::Connect(_))), "{refresh:?}");
    })
    .await
    .unwrap();
}
