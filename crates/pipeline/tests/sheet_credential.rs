//! A Google credential set anew (`sluice credentials set`) while a flush
//! is still busy with the old one: the flush's refusal must not leave the
//! rows waiting for a redrive nobody asks for. The flush runs on steps
//! whose calls to Google (through a proxy in front of the sandbox) or to
//! the alert webhook are held by the test, so the person's set comes
//! exactly while the flush's call is in the air: no timing.

use crate::sheet_support;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::Response;
use sheet_support::{CLIENT_ID, CLIENT_SECRET, SheetTest, USER, alert_receiver};
use sluice_cafe24::Secret;
use sluice_pipeline::sheet_io::{FlushNext, FlushOutput, FlushRequest};
use sluice_pipeline::{PipelineConfig, ServiceCore, SheetConfig, SheetService};
use sluice_redis::credential_state::GOOGLE_TOKEN;
use sluice_redis::{Connection, CredentialState, Tag, TokenStore};
use sluice_sandbox::{SheetsOp, SheetsSandboxConfig};
use sluice_sheets::{SheetsClient, SheetsConfig};
use sluice_testkit::sandbox::sheets_config;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinHandle;

const LIMIT: Duration = Duration::from_secs(60);

/// The Google account a person switches the credential to.
const ANOTHER: &str = "another-account";

fn settings() -> SheetConfig {
    SheetConfig { flush_lease: Duration::from_secs(3), ..SheetConfig::default() }
}

/// One row per append, each admitted at once: one run makes several.
fn one_row_appends() -> SheetConfig {
    let per_credential = (600, Duration::from_secs(60));
    SheetConfig { max_rows: 1, gather: Duration::ZERO, per_credential, ..settings() }
}

/// An endpoint on 127.0.0.1 that tells the test each call it gets and
/// holds the call until the test lets one go.
struct Held {
    url: String,
    arrived: mpsc::UnboundedReceiver<()>,
    release: Arc<Semaphore>,
}

impl Held {
    async fn start<F, Fut>(answer: F) -> Self
    where
        F: Fn(Method, Uri, HeaderMap, Bytes) -> Fut + Clone + Send + Sync + 'static,
        Fut: Future<Output = Response> + Send + 'static,
    {
        let (tell, arrived) = mpsc::unbounded_channel();
        let release = Arc::new(Semaphore::new(0));
        let gate = release.clone();
        let app = Router::new().fallback(move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
            let (tell, gate, answer) = (tell.clone(), gate.clone(), answer.clone());
            async move {
                let _ = tell.send(());
                gate.acquire().await.expect("the semaphore stays open").forget();
                answer(method, uri, headers, body).await
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self { url, arrived, release }
    }

    async fn wait_for_call(&mut self) {
        self.arrived.recv().await.expect("the endpoint is up");
    }

    fn let_one_go(&self) {
        self.release.add_permits(1);
    }

    fn let_all_go(&self) {
        self.release.add_permits(1_000);
    }
}

/// The sandbox behind a [`Held`] proxy: each call is held, then passed
/// on and answered by the sandbox.
async fn held_proxy(t: &SheetTest) -> Held {
    let (http, sandbox) = (sluice_http::builder().build().unwrap(), t.sandbox.base_url());
    Held::start(move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
        let (http, sandbox) = (http.clone(), sandbox.clone());
        async move {
            let method = reqwest::Method::from_bytes(method.as_str().as_bytes()).unwrap();
            let mut call = http.request(method, format!("{sandbox}{uri}")).body(body);
            for name in [header::CONTENT_TYPE, header::AUTHORIZATION] {
                if let Some(value) = headers.get(&name).and_then(|v| v.to_str().ok()) {
                    call = call.header(name.as_str(), value);
                }
            }
            let sent = call.send().await.unwrap();
            let status = StatusCode::from_u16(sent.status().as_u16()).unwrap();
            let body = sent.bytes().await.unwrap();
            Response::builder()
                .status(status)
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(body))
                .unwrap()
        }
    })
    .await
}

/// An alert webhook behind a [`Held`] one, keeping each text.
async fn held_alert_webhook(texts: Arc<Mutex<Vec<String>>>) -> Held {
    Held::start(move |_: Method, _: Uri, _: HeaderMap, body: Bytes| {
        let texts = texts.clone();
        async move {
            let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
            texts.lock().unwrap().push(json["text"].as_str().unwrap_or_default().to_owned());
            Response::new(Body::from("ok"))
        }
    })
    .await
}

/// Steps over `t`'s Redis and flush trigger, with `settings`, calling
/// Google through `sheets` and alerting to `alert_url`.
async fn steps_with(
    t: &SheetTest,
    settings: SheetConfig,
    sheets: SheetsConfig,
    alert_url: String,
) -> SheetService<Connection> {
    let config = PipelineConfig { sheets: settings, ..PipelineConfig::default() };
    SheetService::new(ServiceCore::new(t.redis.conn().await, t.redis.keyspace(), config), t.trigger.clone())
        .with_sheets(SheetsClient::new(sheets.with_timeouts(Duration::from_secs(10), Duration::from_secs(2))).unwrap())
        .with_alert_url(Some(alert_url))
}

/// The sheet's pending flush request (its token holds the sheet's gate).
fn pending(t: &SheetTest, gid: u64) -> FlushRequest {
    t.trigger.requests.lock().unwrap().iter().rev().find(|(r, _)| r.sheet_gid == gid).unwrap().0.clone()
}

fn asked(t: &SheetTest, gid: u64) -> usize {
    t.trigger.requests.lock().unwrap().iter().filter(|(r, _)| r.sheet_gid == gid).count()
}

async fn rejected(t: &SheetTest) -> Option<String> {
    CredentialState::new(t.redis.conn().await, t.redis.keyspace()).rejected(USER).await.unwrap()
}

/// A test whose sheet 0 got `r000` (so its stored access token is known
/// and its header written), then lost its grant at Google, then had
/// `r001`..`r003` buffered.
async fn start_revoked(test: &str) -> (SheetTest, Vec<String>) {
    let t = SheetTest::start(test, SheetsSandboxConfig::default(), settings(), Duration::from_secs(1)).await;
    t.buffer(0, "r000").await;
    t.flush_until_idle(0, 3).await;
    t.sandbox.revoke_refresh_tokens(USER);
    let held: Vec<String> = (1..4).map(|i| format!("r{i:03}")).collect();
    t.buffer_all(0, &held).await;
    (t, [vec!["r000".to_owned()], held].concat())
}

/// Runs the pending flush of sheet 0 on `steps`, in the background.
fn flush_in_background(t: &SheetTest, steps: &SheetService<Connection>) -> JoinHandle<FlushOutput> {
    let (steps, request) = (steps.clone(), pending(t, 0));
    tokio::spawn(async move { steps.flush_sheet(request).await.unwrap() })
}

/// A person sets a new refresh token for the credential while the flush
/// holds the sheet's gate: the set's ask for the sheet is turned away.
async fn set_anew_while_the_flush_runs(t: &SheetTest) {
    let before = asked(t, 0);
    let fresh = t.sandbox.add_user(CLIENT_ID, USER);
    t.steps.set_google_credential(USER, &Secret::new(fresh), None).await.unwrap();
    assert_eq!(asked(t, 0), before, "the running flush holds the gate: the set's ask goes unheard");
}

fn assert_sheet(t: &SheetTest, expected: &[String]) {
    let column = t.column_a(0);
    assert_eq!(column.first().map(String::as_str), Some("row_id"), "{column:?}");
    assert_eq!(&column[1..], expected, "every row once, in order");
}

/// The flush's old access token is refused (401), it refreshes with the
/// old refresh token, and while that refresh is in the air a person sets
/// a new one; then Google refuses the old one. That refusal used to mark
/// the new credential rejected and end the run parked: nothing asked for
/// the sheet again, its rows waited for good.
#[tokio::test]
async fn a_refusal_of_the_old_credential_after_it_was_set_anew_neither_rejects_nor_parks() {
    tokio::time::timeout(LIMIT, async {
        let (t, rows) = start_revoked("credential_set_during_refresh").await;
        let mut token_endpoint = held_proxy(&t).await;
        let alerts = Arc::new(Mutex::new(Vec::new()));
        let token_url = format!("{}/token", token_endpoint.url);
        let sheets = sheets_config(&t.sandbox, CLIENT_ID, CLIENT_SECRET).with_token_url(token_url).unwrap();
        let steps = steps_with(&t, settings(), sheets, alert_receiver(alerts.clone()).await).await;
        let flush = flush_in_background(&t, &steps);
        token_endpoint.wait_for_call().await;
        set_anew_while_the_flush_runs(&t).await;
        let before = asked(&t, 0);
        token_endpoint.let_one_go();

        let out = flush.await.unwrap();
        assert_eq!((out.next, out.wait_seconds, out.parked.as_deref()), (FlushNext::Later, 0, None), "{out:?}");
        assert_eq!(rejected(&t).await, None, "the new credential is not marked rejected");
        let again: Vec<Duration> = t.trigger.requests.lock().unwrap().iter().skip(before).map(|(_, d)| *d).collect();
        assert_eq!(again, [Duration::ZERO], "the flush asked for itself again, at once");
        assert!(alerts.lock().unwrap().is_empty(), "no alert: the credential was fixed");
        t.flush_until_idle(0, 4).await;
        assert_sheet(&t, &rows);
        assert!(t.alerts.lock().unwrap().is_empty());
    })
    .await
    .unwrap();
}

/// Google refuses the old credential before the person sets a new one,
/// but the set comes while the refused flush is still parking (its alert
/// in the air): its rejection is cleared, but the set's ask for the sheet
/// was turned away, so the parked run itself must look again.
#[tokio::test]
async fn a_credential_set_while_a_refused_flush_is_still_parking_gets_its_rows_written() {
    tokio::time::timeout(LIMIT, async {
        let (t, rows) = start_revoked("credential_set_during_park").await;
        let alerts = Arc::new(Mutex::new(Vec::new()));
        let mut webhook = held_alert_webhook(alerts.clone()).await;
        let sheets = sheets_config(&t.sandbox, CLIENT_ID, CLIENT_SECRET);
        let steps = steps_with(&t, settings(), sheets, format!("{}/", webhook.url)).await;
        let flush = flush_in_background(&t, &steps);
        webhook.wait_for_call().await;
        assert!(rejected(&t).await.is_some(), "refused while the old credential was stored: rejected");
        set_anew_while_the_flush_runs(&t).await;
        assert_eq!(rejected(&t).await, None, "the set cleared it");
        let before = asked(&t, 0);
        webhook.let_one_go();

        let out = flush.await.unwrap();
        assert_eq!(out.next, FlushNext::Parked, "{out:?}");
        assert_eq!(asked(&t, 0), before + 1, "the parked run saw the credential usable and asked for the sheet");
        assert_eq!(alerts.lock().unwrap().len(), 1);
        t.flush_until_idle(0, 4).await;
        assert_sheet(&t, &rows);
    })
    .await
    .unwrap();
}

/// A run whose first append's token was refused (401) and refreshed
/// meets, at its second append, the access token `sluice credentials set`
/// stored meanwhile (one Google no longer takes; here one it never
/// issued). That is worth a refresh, not a park: the run's earlier
/// refresh used to count as this token's, and the credential just set was
/// parked as refused.
#[tokio::test]
async fn a_run_that_refreshed_before_the_credential_was_set_refreshes_the_new_one() {
    tokio::time::timeout(LIMIT, async {
        let t =
            SheetTest::start("credential_set_between_appends", SheetsSandboxConfig::default(), settings(), LIMIT).await;
        // Stored as good for an hour, as a person's token JSON says.
        let (stale, hour) = (Secret::new("ya29.not-issued-by-google"), Duration::from_secs(3600));
        let old = Secret::new(t.refresh_token.clone());
        t.steps.set_google_credential(USER, &old, Some((&stale, hour))).await.unwrap();
        let rows = vec!["r000".to_owned(), "r001".to_owned()];
        t.buffer_all(0, &rows).await;
        let mut api = held_proxy(&t).await;
        let alerts = Arc::new(Mutex::new(Vec::new()));
        let sheets = sheets_config(&t.sandbox, CLIENT_ID, CLIENT_SECRET).with_api_base_url(&api.url).unwrap();
        let steps = steps_with(&t, one_row_appends(), sheets, alert_receiver(alerts.clone()).await).await;
        // The header check with the stale token (401), again with a
        // refreshed one, then the first append, held.
        let flush = flush_in_background(&t, &steps);
        for _ in 0..2 {
            api.wait_for_call().await;
            api.let_one_go();
        }
        api.wait_for_call().await;
        let fresh = Secret::new(t.sandbox.add_user(CLIENT_ID, USER));
        t.steps.set_google_credential(USER, &fresh, Some((&stale, hour))).await.unwrap();
        api.let_all_go();

        let out = flush.await.unwrap();
        assert_eq!((out.appended_rows, out.next, out.parked.as_deref()), (2, FlushNext::Idle, None), "{out:?}");
        assert_eq!(rejected(&t).await, None);
        assert!(alerts.lock().unwrap().is_empty(), "{:?}", alerts.lock().unwrap());
        assert_sheet(&t, &rows);
        let refreshes = t.sandbox.calls().iter().filter(|c| c.op == SheetsOp::Token).count();
        assert_eq!(refreshes, 2, "one refresh for each stale token");
    })
    .await
    .unwrap();
}

/// A flush refreshes the stored credential (its access token unknown) and,
/// while Google's answer is in the air, a person sets a new one (another
/// Google account's). The flush used to store its refreshed token, with
/// the old refresh token, over the new one: the person's fix silently
/// undone, the rows written as the old account.
#[tokio::test]
async fn a_refresh_answered_after_the_credential_was_set_anew_keeps_and_uses_the_new_one() {
    tokio::time::timeout(LIMIT, async {
        let t =
            SheetTest::start("credential_set_during_good_refresh", SheetsSandboxConfig::default(), settings(), LIMIT)
                .await;
        let rows = vec!["r000".to_owned()];
        t.buffer_all(0, &rows).await;
        let mut token_endpoint = held_proxy(&t).await;
        let token_url = format!("{}/token", token_endpoint.url);
        let sheets = sheets_config(&t.sandbox, CLIENT_ID, CLIENT_SECRET).with_token_url(token_url).unwrap();
        let alerts = Arc::new(Mutex::new(Vec::new()));
        let steps = steps_with(&t, settings(), sheets, alert_receiver(alerts.clone()).await).await;
        let flush = flush_in_background(&t, &steps);
        token_endpoint.wait_for_call().await;
        let fresh = t.sandbox.add_user(CLIENT_ID, ANOTHER);
        t.steps.set_google_credential(USER, &Secret::new(fresh.clone()), None).await.unwrap();
        token_endpoint.let_all_go();

        let out = flush.await.unwrap();
        assert_eq!((out.appended_rows, out.next, out.parked.as_deref()), (1, FlushNext::Idle, None), "{out:?}");
        let tokens = TokenStore::new(t.redis.conn().await, t.redis.keyspace());
        let stored = tokens.get(&Tag::for_credential(USER), GOOGLE_TOKEN).await.unwrap().unwrap();
        assert!(stored.refresh_token == fresh, "the refresh token the person set is still stored");
        assert_sheet(&t, &rows);
        let calls = t.sandbox.calls();
        let users = |op: SheetsOp| -> Vec<Option<String>> {
            calls.iter().filter(|c| c.op == op).map(|c| c.user.clone()).collect()
        };
        let (old, new) = (Some(USER.to_owned()), Some(ANOTHER.to_owned()));
        assert_eq!(users(SheetsOp::Token), [old, new.clone()], "the new credential refreshed once");
        assert_eq!(users(SheetsOp::ValuesAppend), [new], "the rows written with the new credential");
        assert!(alerts.lock().unwrap().is_empty() && rejected(&t).await.is_none());
    })
    .await
    .unwrap();
}

/// Nobody fixes a refused credential: it is rejected and the rows parked
/// with one alert, as before; so is a credential with no token stored.
#[tokio::test]
async fn a_credential_nobody_changed_is_still_rejected_and_parked_with_its_alert() {
    tokio::time::timeout(LIMIT, async {
        let (t, _) = start_revoked("credential_refused_unchanged").await;
        let out = t.flush(0).await;
        assert_eq!(out.next, FlushNext::Parked, "{out:?}");
        assert!(out.parked.unwrap().starts_with("credential"));
        assert!(rejected(&t).await.unwrap().contains("refused"));
        let alerts = t.alerts.lock().unwrap().clone();
        assert!(alerts.len() == 1 && alerts[0].contains(&format!("credential `{USER}` was rejected")), "{alerts:?}");
        // The parked run found it rejected still: it asked for nothing.
        let asked_before = asked(&t, 0);
        assert_eq!(t.flush(0).await.next, FlushNext::Parked);
        assert_eq!(asked(&t, 0), asked_before);

        // No token stored at all.
        let mut conn = t.redis.conn().await;
        let key = TokenStore::new(conn.clone(), t.redis.keyspace()).key(&Tag::for_credential(USER), GOOGLE_TOKEN);
        let _: () = redis::cmd("DEL").arg(&key).query_async(&mut conn).await.unwrap();
        CredentialState::new(conn, t.redis.keyspace()).accept(USER).await.unwrap();
        let out = t.flush(0).await;
        assert_eq!(out.next, FlushNext::Parked, "{out:?}");
        assert!(rejected(&t).await.unwrap().starts_with("no Google token"));
        assert_eq!(t.column_a(0).len(), 2, "only the header and r000");
    })
    .await
    .unwrap();
}
