//! The Sheets API v4 client: one `reqwest::Client` (rustls, connection
//! pool, the configured timeouts, no redirects) and the sheet-title cache,
//! both shared by clones.
//!
//! Every method addresses a sheet by gid. Values calls need the title, so
//! they first ask [`SheetsClient::sheet_title`] (cached; see
//! [`crate::titles`]), then send one request. A failure to learn the title
//! is a read failure: nothing was written, whatever the method.
//!
//! Tokens travel only in the `Authorization` header (marked sensitive) or
//! the token request's form body; no outcome or error text includes them.

use crate::a1::{A1Range, CellRange};
use crate::classify::{Call, body_failed, classify, retry_after, send_failed, transport_failure};
use crate::config::{ConfigError, SheetsConfig};
use crate::error_body::GoogleError;
use crate::outcome::{Missing, Outcome, Unavailable};
use crate::titles::TitleCache;
use crate::token::{AccessGrant, RefreshError, TokenResponse};
use crate::values::{
    AppendValuesResponse, InsertDataOption, ROWS, Spreadsheet, UpdateValuesResponse, ValueInputOption,
};
use crate::values::{ValueRange, ValueRenderOption};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::{RequestBuilder, StatusCode, Url};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use sluice_domain::{OAuthError, Secret};
use std::sync::Arc;
use std::time::SystemTime;

/// What stays unencoded in a path segment: RFC 3986's unreserved
/// characters. A range holds `'`, `!`, `:` and spaces, and the spreadsheet
/// id is caller input; encoding the rest keeps both one segment each.
const PATH_SEGMENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// The body of `append` and `update` (a `ValueRange`), borrowing the rows.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ValuesBody<'a> {
    range: &'a str,
    major_dimension: &'a str,
    values: &'a [Vec<Value>],
}

/// A Google Sheets API client. `Debug` shows the configuration with the
/// client secret redacted.
#[derive(Debug, Clone)]
pub struct SheetsClient {
    http: reqwest::Client,
    config: Arc<SheetsConfig>,
    titles: TitleCache,
}

impl SheetsClient {
    pub fn new(config: SheetsConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let http = sluice_http::builder()
            .timeout(config.request_timeout)
            .connect_timeout(config.connect_timeout)
            // A followed redirect would send a POST again: a second append.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| ConfigError::HttpClient(e.to_string()))?;
        Ok(Self { http, config: Arc::new(config), titles: TitleCache::default() })
    }

    pub fn config(&self) -> &SheetsConfig {
        &self.config
    }

    /// The title of sheet `gid` (spreadsheets.get fields=sheets.properties),
    /// cached per spreadsheet. No sheet with that gid → `NotFound
    /// Sheet{gid}`.
    pub async fn sheet_title(&self, token: &Secret, spreadsheet_id: &str, gid: u64) -> Outcome<String> {
        if let Some(title) = self.titles.title(spreadsheet_id, gid) {
            return Outcome::Ok(title);
        }
        let url = match self.url(spreadsheet_id, None, &[("fields", "sheets.properties")]) {
            Ok(url) => url,
            Err(reason) => return Outcome::InvalidTarget { reason },
        };
        let request = self.http.get(url).bearer_auth(token.expose());
        let outcome: Outcome<Spreadsheet> = self.exchange(Call::Read, spreadsheet_id, request).await;
        outcome.and_then(|spreadsheet| {
            self.titles.remember(spreadsheet_id, &spreadsheet.sheets);
            match spreadsheet.sheets.into_iter().find(|s| s.properties.sheet_id == gid) {
                Some(sheet) => Outcome::Ok(sheet.properties.title),
                None => Outcome::NotFound { missing: Missing::Sheet { gid }, error: None },
            }
        })
    }

    /// values.append of `rows` to the sheet `gid` starting at column A
    /// (range `'Title'!A1`), `INSERT_ROWS`. Empty `rows` → `InvalidTarget`.
    pub async fn append(
        &self,
        token: &Secret,
        spreadsheet_id: &str,
        gid: u64,
        rows: &[Vec<Value>],
        input: ValueInputOption,
    ) -> Outcome<AppendValuesResponse> {
        if rows.is_empty() {
            return Outcome::InvalidTarget { reason: "no rows to append".into() };
        }
        let title = match self.sheet_title(token, spreadsheet_id, gid).await.into_result() {
            Ok(title) => title,
            Err(failure) => return failure,
        };
        let range = A1Range::new(title, CellRange::rect(1, 1, 1, 1)).to_request();
        let query = [("valueInputOption", input.as_str()), ("insertDataOption", InsertDataOption::InsertRows.as_str())];
        let url = match self.url(spreadsheet_id, Some((&range, ":append")), &query) {
            Ok(url) => url,
            Err(reason) => return Outcome::InvalidTarget { reason },
        };
        let body = ValuesBody { range: &range, major_dimension: ROWS, values: rows };
        let request = self.http.post(url).bearer_auth(token.expose()).json(&body);
        self.exchange(Call::Write, spreadsheet_id, request).await
    }

    /// values.get of `cells` (the whole sheet when `None`) in sheet `gid`;
    /// `ROWS`, `FORMATTED_VALUE` (every cell a string as displayed).
    pub async fn get(
        &self,
        token: &Secret,
        spreadsheet_id: &str,
        gid: u64,
        cells: Option<CellRange>,
    ) -> Outcome<ValueRange> {
        let title = match self.sheet_title(token, spreadsheet_id, gid).await.into_result() {
            Ok(title) => title,
            Err(failure) => return failure,
        };
        let range = A1Range { sheet: Some(title), cells }.to_request();
        let query = [("majorDimension", ROWS), ("valueRenderOption", ValueRenderOption::FormattedValue.as_str())];
        let url = match self.url(spreadsheet_id, Some((&range, "")), &query) {
            Ok(url) => url,
            Err(reason) => return Outcome::InvalidTarget { reason },
        };
        let request = self.http.get(url).bearer_auth(token.expose());
        self.exchange(Call::Read, spreadsheet_id, request).await
    }

    /// values.update (PUT) of `rows` at `cells` of sheet `gid`. Empty
    /// `rows` → `InvalidTarget` (Google would accept it and change nothing).
    pub async fn update(
        &self,
        token: &Secret,
        spreadsheet_id: &str,
        gid: u64,
        cells: CellRange,
        rows: &[Vec<Value>],
        input: ValueInputOption,
    ) -> Outcome<UpdateValuesResponse> {
        if rows.is_empty() {
            return Outcome::InvalidTarget { reason: "no rows to write".into() };
        }
        let title = match self.sheet_title(token, spreadsheet_id, gid).await.into_result() {
            Ok(title) => title,
            Err(failure) => return failure,
        };
        let range = A1Range::new(title, cells).to_request();
        let url = match self.url(spreadsheet_id, Some((&range, "")), &[("valueInputOption", input.as_str())]) {
            Ok(url) => url,
            Err(reason) => return Outcome::InvalidTarget { reason },
        };
        let body = ValuesBody { range: &range, major_dimension: ROWS, values: rows };
        let request = self.http.put(url).bearer_auth(token.expose()).json(&body);
        self.exchange(Call::Write, spreadsheet_id, request).await
    }

    /// The OAuth2 refresh grant against `config.token_url`. Google keeps the
    /// refresh token; `AccessGrant::refresh_token` is set only if it sent a
    /// new one.
    pub async fn refresh(&self, refresh_token: &Secret) -> Result<AccessGrant, RefreshError> {
        let form = [
            ("grant_type", "refresh_token"),
            ("client_id", self.config.client_id.as_str()),
            ("client_secret", self.config.client_secret.expose()),
            ("refresh_token", refresh_token.expose()),
        ];
        let unavailable = |e: reqwest::Error| RefreshError::Unavailable(transport_failure(&e));
        let response = self.http.post(&self.config.token_url).form(&form).send().await.map_err(unavailable)?;
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.bytes().await.map_err(unavailable)?;
        match status {
            StatusCode::OK => {
                // serde's message may quote a value from the body: a token.
                // Say where the body is wrong, not what it holds.
                let response: TokenResponse = serde_json::from_slice(&body).map_err(|e| {
                    RefreshError::InvalidResponse(format!(
                        "not a token response ({:?} error at line {} column {})",
                        e.classify(),
                        e.line(),
                        e.column()
                    ))
                })?;
                AccessGrant::from_response(response, SystemTime::now()).map_err(RefreshError::InvalidResponse)
            }
            StatusCode::TOO_MANY_REQUESTS => Err(RefreshError::Throttled { retry_after: retry_after(&headers) }),
            s if s.is_server_error() || s == StatusCode::REQUEST_TIMEOUT => {
                Err(RefreshError::Unavailable(Unavailable::ServerError {
                    status: s.as_u16(),
                    error: GoogleError::parse(&body),
                }))
            }
            s if s.is_client_error() => {
                Err(RefreshError::Rejected { status: s.as_u16(), error: OAuthError::parse(&body) })
            }
            s => Err(RefreshError::Unavailable(Unavailable::InvalidBody(format!("unexpected status {s}")))),
        }
    }

    /// Sends `request` and classifies the answer. Forgets the spreadsheet's
    /// titles when Google says a range (so a title) or the spreadsheet is
    /// unknown: the next call resolves the gid afresh.
    async fn exchange<T: DeserializeOwned>(
        &self,
        call: Call,
        spreadsheet_id: &str,
        request: RequestBuilder,
    ) -> Outcome<T> {
        let response = match request.send().await {
            Ok(response) => response,
            Err(e) => return send_failed(call, &e),
        };
        let status = response.status();
        let headers = response.headers().clone();
        let outcome = match response.bytes().await {
            Ok(body) => classify(call, status, &headers, &body),
            Err(e) => body_failed(call, status, &headers, transport_failure(&e)),
        };
        if matches!(outcome, Outcome::BadRequest { range: true, .. } | Outcome::NotFound { .. }) {
            self.titles.forget(spreadsheet_id);
        }
        outcome
    }

    /// `{api}/v4/spreadsheets/{id}` or, with `range`,
    /// `{api}/v4/spreadsheets/{id}/values/{range}{suffix}` (`suffix` a
    /// method such as `:append`), id and range percent-encoded, then
    /// `query`.
    fn url(&self, spreadsheet_id: &str, range: Option<(&str, &str)>, query: &[(&str, &str)]) -> Result<Url, String> {
        check_spreadsheet_id(spreadsheet_id)?;
        let base = self.config.api_base_url.trim_end_matches('/');
        let mut url = format!("{base}/v4/spreadsheets/{}", utf8_percent_encode(spreadsheet_id, PATH_SEGMENT));
        if let Some((range, suffix)) = range {
            url = format!("{url}/values/{}{suffix}", utf8_percent_encode(range, PATH_SEGMENT));
        }
        let mut url = Url::parse(&url).map_err(|e| format!("cannot build the request URL: {e}"))?;
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        Ok(url)
    }
}

/// Google's ids are URL-safe base64-like text; anything empty or with
/// whitespace or control characters is a configuration mistake, named here
/// rather than sent.
fn check_spreadsheet_id(id: &str) -> Result<(), String> {
    if id.is_empty() {
        Err("the spreadsheet id is empty".into())
    } else if id.chars().any(|c| c.is_whitespace() || c.is_control()) {
        Err(format!("the spreadsheet id {id:?} contains whitespace or control characters"))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client() -> SheetsClient {
        let config =
            SheetsConfig::new("client-id", "very-secret-value").with_api_base_url("http://127.0.0.1:9/").unwrap();
        SheetsClient::new(config).unwrap()
    }

    #[test]
    fn urls_encode_the_id_and_range_as_one_segment_each() {
        let c = client();
        let range = A1Range::new("Jon's data", CellRange::rect(1, 1, 3, 2)).to_request();
        assert_eq!(range, "'Jon''s data'!A1:C2");
        let url = c.url("abc-_1", Some((&range, ":append")), &[("valueInputOption", "RAW")]).unwrap();
        assert_eq!(
            url.as_str(),
            "http://127.0.0.1:9/v4/spreadsheets/abc-_1/values/%27Jon%27%27s%20data%27%21A1%3AC2:append?valueInputOption=RAW"
        );
        let meta = c.url("a/b?c", None, &[("fields", "sheets.properties")]).unwrap();
        assert_eq!(meta.as_str(), "http://127.0.0.1:9/v4/spreadsheets/a%2Fb%3Fc?fields=sheets.properties");
        let korean = c.url("s", Some(("'데이터'", "")), &[]).unwrap();
        assert_eq!(korean.as_str(), "http://127.0.0.1:9/v4/spreadsheets/s/values/%27%EB%8D%B0%EC%9D%B4%ED%84%B0%27");
    }

    #[test]
    fn unusable_ids_are_named_not_sent() {
        let c = client();
        assert_eq!(c.url("", None, &[]).unwrap_err(), "the spreadsheet id is empty");
        assert!(c.url("a b", None, &[]).unwrap_err().contains("whitespace"));
    }

    #[tokio::test]
    async fn empty_rows_and_bad_ids_never_reach_google() {
        // Port 9 (discard) on loopback has no listener: a request would fail
        // as Unavailable, not InvalidTarget.
        let c = client();
        let token = Secret::new("t");
        let none: &[Vec<Value>] = &[];
        let append = c.append(&token, "s", 0, none, ValueInputOption::Raw).await;
        assert_eq!(append, Outcome::InvalidTarget { reason: "no rows to append".into() });
        let update = c.update(&token, "s", 0, CellRange::rect(1, 1, 1, 1), none, ValueInputOption::Raw).await;
        assert!(matches!(update, Outcome::InvalidTarget { .. }), "{update:?}");
        let title = c.sheet_title(&token, "", 0).await;
        assert!(matches!(title, Outcome::InvalidTarget { .. }), "{title:?}");
    }

    #[test]
    fn debug_never_shows_the_client_secret() {
        let debug = format!("{:?}", client());
        assert!(!debug.contains("very-secret-value"), "{debug}");
    }

    #[test]
    fn a_config_built_by_hand_is_checked() {
        let config = SheetsConfig { token_url: "token".into(), ..SheetsConfig::new("id", "s") };
        assert_eq!(SheetsClient::new(config).unwrap_err(), ConfigError::BadUrl("token".into()));
    }
}
