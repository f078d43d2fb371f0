//! What the Sheets sandbox tests share: a started sandbox with one client,
//! one user and one spreadsheet, and raw HTTP calls at Google's paths.
//! The tests speak the wire format themselves (reqwest, JSON) so they check
//! the sandbox, not a client library.

// Each test crate uses a different part of this module.

use serde_json::{Value, json};
use sluice_sandbox::{SheetsSandbox, SheetsSandboxConfig};
use std::time::Duration;

pub(crate) const CLIENT_ID: &str = "sandbox-client";
pub(crate) const CLIENT_SECRET: &str = "sandbox-secret";
pub(crate) const USER: &str = "ann";
pub(crate) const SPREADSHEET: &str = "1BxiMVs0XRA5nFMdKvBdBZjgmUUqptlbs74OgvE2upms";
/// Sheet `Sheet1` (gid 0) and `Form responses` (gid 7).
pub(crate) const FIRST_GID: u64 = 0;
pub(crate) const FORM_GID: u64 = 7;

/// Bounds every test.
pub(crate) const TEST_TIMEOUT: Duration = Duration::from_secs(20);

/// A sandbox ready to call: the client, the user's refresh token and an
/// access token.
#[derive(Debug)]
pub(crate) struct Fixture {
    pub(crate) sandbox: SheetsSandbox,
    pub(crate) http: reqwest::Client,
    pub(crate) refresh_token: String,
    pub(crate) access_token: String,
}

/// An answer: status and JSON body (`Null` when it is not JSON).
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) body: Value,
    pub(crate) headers: reqwest::header::HeaderMap,
}

impl Reply {
    async fn read(response: reqwest::Response) -> Self {
        let (status, headers) = (response.status().as_u16(), response.headers().clone());
        let body = response.json().await.unwrap_or(Value::Null);
        Self { status, body, headers }
    }

    /// `error.message` of Google's error JSON.
    pub(crate) fn message(&self) -> &str {
        self.body["error"]["message"].as_str().unwrap_or_default()
    }
}

impl Fixture {
    pub(crate) async fn start(config: SheetsSandboxConfig) -> Self {
        let sandbox = SheetsSandbox::start(config).await.expect("the sandbox starts");
        sandbox.add_client(CLIENT_ID, CLIENT_SECRET);
        sandbox.create_spreadsheet(SPREADSHEET, &[(FIRST_GID, "Sheet1"), (FORM_GID, "Form responses")]);
        let refresh_token = sandbox.add_user(CLIENT_ID, USER);
        let http = sluice_http::client();
        let mut fixture = Self { sandbox, http, refresh_token, access_token: String::new() };
        fixture.access_token = fixture.access_token_for(&fixture.refresh_token.clone()).await;
        fixture
    }

    pub(crate) async fn with_defaults() -> Self {
        Self::start(SheetsSandboxConfig::default()).await
    }

    /// The refresh grant with the fixture's client credentials.
    pub(crate) async fn refresh(&self, refresh_token: &str) -> Reply {
        self.token_request(&[
            ("grant_type", "refresh_token"),
            ("client_id", CLIENT_ID),
            ("client_secret", CLIENT_SECRET),
            ("refresh_token", refresh_token),
        ])
        .await
    }

    pub(crate) async fn token_request(&self, form: &[(&str, &str)]) -> Reply {
        Reply::read(self.http.post(self.sandbox.token_url()).form(form).send().await.expect("token endpoint answers"))
            .await
    }

    /// A new access token for `refresh_token`.
    pub(crate) async fn access_token_for(&self, refresh_token: &str) -> String {
        let reply = self.refresh(refresh_token).await;
        assert_eq!(reply.status, 200, "{:?}", reply.body);
        reply.body["access_token"].as_str().expect("an access token").to_owned()
    }

    pub(crate) fn values_url(&self, range: &str) -> String {
        format!("{}/v4/spreadsheets/{SPREADSHEET}/values/{}", self.sandbox.base_url(), encode(range))
    }

    /// `values.append` with INSERT_ROWS.
    pub(crate) async fn append(&self, token: &str, range: &str, input: &str, rows: Value) -> Reply {
        let url = format!("{}:append?valueInputOption={input}&insertDataOption=INSERT_ROWS", self.values_url(range));
        let body = json!({"range": range, "majorDimension": "ROWS", "values": rows});
        Reply::read(self.http.post(url).bearer_auth(token).json(&body).send().await.expect("append answers")).await
    }

    /// `values.get`; `query` is appended as is (e.g. `majorDimension=COLUMNS`).
    pub(crate) async fn get(&self, token: &str, range: &str, query: &str) -> Reply {
        let url = format!("{}?{query}", self.values_url(range));
        Reply::read(self.http.get(url).bearer_auth(token).send().await.expect("get answers")).await
    }

    /// `values.update`.
    pub(crate) async fn update(&self, token: &str, range: &str, input: &str, rows: Value) -> Reply {
        let url = format!("{}?valueInputOption={input}", self.values_url(range));
        let body = json!({"range": range, "majorDimension": "ROWS", "values": rows});
        Reply::read(self.http.put(url).bearer_auth(token).json(&body).send().await.expect("update answers")).await
    }

    /// `spreadsheets.batchUpdate` of the fixture's spreadsheet with `body`
    /// (`{"requests": [...]}`).
    pub(crate) async fn batch_update(&self, token: &str, body: Value) -> Reply {
        let url = format!("{}/v4/spreadsheets/{SPREADSHEET}:batchUpdate", self.sandbox.base_url());
        let sent = self.http.post(url).bearer_auth(token).json(&body).send().await;
        Reply::read(sent.expect("batchUpdate answers")).await
    }

    /// `spreadsheets.get` of `spreadsheet_id` for the sheet properties.
    pub(crate) async fn spreadsheet(&self, token: &str, spreadsheet_id: &str) -> Reply {
        let url = format!("{}/v4/spreadsheets/{spreadsheet_id}?fields=sheets.properties", self.sandbox.base_url());
        Reply::read(self.http.get(url).bearer_auth(token).send().await.expect("get answers")).await
    }

    /// A JSON call to the control plane.
    pub(crate) async fn control(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Reply {
        let mut request = self.http.request(method, format!("{}/sandbox/sheets{path}", self.sandbox.base_url()));
        if let Some(body) = body {
            request = request.json(&body);
        }
        Reply::read(request.send().await.expect("control plane answers")).await
    }
}

/// Percent-encodes a path segment (everything but RFC 3986 unreserved).
pub(crate) fn encode(segment: &str) -> String {
    segment
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Runs a test body within [`TEST_TIMEOUT`].
pub(crate) async fn bounded<F: Future<Output = ()>>(body: F) {
    tokio::time::timeout(TEST_TIMEOUT, body).await.expect("the test finishes within its bound");
}
