//! Turns one HTTP exchange with the Sheets API into an [`Outcome`], per the
//! table in [`crate::outcome`]. Kept apart from the client so every row of
//! that table can be checked without a server.
//!
//! Whether a failure is `Unavailable` or `OutcomeUnknown` depends on the
//! call: a read changes nothing, so any failure is safe to retry; a write
//! may have been applied as soon as its request could have reached Google.

use crate::error_body::GoogleError;
use crate::outcome::{Missing, Outcome, Unavailable};
use reqwest::StatusCode;
use reqwest::header::{HeaderMap, RETRY_AFTER};
use serde::de::DeserializeOwned;
use std::time::Duration;

/// The longest `Retry-After` believed: Google's per-minute quotas refill
/// within a minute, so anything longer is a proxy's mistake.
pub(crate) const MAX_RETRY_AFTER: Duration = Duration::from_secs(300);

/// Whether the call can change the spreadsheet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Call {
    /// `spreadsheets.get`, `values.get`.
    Read,
    /// `values.append`, `values.update`.
    Write,
}

impl Call {
    /// A failure after the request may have left: retryable for a read,
    /// unknown for a write.
    fn failed<T>(self, cause: Unavailable) -> Outcome<T> {
        match self {
            Self::Read => Outcome::Unavailable { cause },
            Self::Write => Outcome::OutcomeUnknown { cause },
        }
    }
}

/// `send()` failed: nothing was answered. Only a connection that was never
/// made proves the request did not leave.
pub(crate) fn send_failed<T>(call: Call, error: &reqwest::Error) -> Outcome<T> {
    match transport_failure(error) {
        cause @ Unavailable::Connect(_) => Outcome::Unavailable { cause },
        cause => call.failed(cause),
    }
}

/// An answer with `status` arrived but its body broke off (`cause`). A 4xx
/// or 429 already says nothing was applied, so the status decides; a
/// success or 5xx without its body is a failure of the exchange.
pub(crate) fn body_failed<T: DeserializeOwned>(
    call: Call,
    status: StatusCode,
    headers: &HeaderMap,
    cause: Unavailable,
) -> Outcome<T> {
    if status.is_client_error() { classify(call, status, headers, b"") } else { call.failed(cause) }
}

/// What a complete answer means.
pub(crate) fn classify<T: DeserializeOwned>(
    call: Call,
    status: StatusCode,
    headers: &HeaderMap,
    body: &[u8],
) -> Outcome<T> {
    if status.is_success() {
        return match serde_json::from_slice(body) {
            Ok(value) => Outcome::Ok(value),
            Err(e) => call.failed(Unavailable::InvalidBody(format!("not the expected JSON: {e}"))),
        };
    }
    let error = GoogleError::parse(body);
    match status {
        StatusCode::TOO_MANY_REQUESTS => Outcome::Throttled {
            quota: error.as_ref().and_then(GoogleError::quota),
            retry_after: retry_after(headers),
            error,
        },
        StatusCode::UNAUTHORIZED => Outcome::Unauthorized { error },
        StatusCode::FORBIDDEN => Outcome::Forbidden { error },
        StatusCode::NOT_FOUND => Outcome::NotFound { missing: Missing::Spreadsheet, error },
        // The server stopped waiting for the request: it was never read,
        // so nothing was applied, and the request itself is not at fault.
        StatusCode::REQUEST_TIMEOUT => {
            Outcome::Unavailable { cause: Unavailable::ServerError { status: status.as_u16(), error } }
        }
        s if s.is_client_error() => Outcome::BadRequest {
            status: s.as_u16(),
            range: error.as_ref().is_some_and(GoogleError::is_range_error),
            error,
        },
        s if s.is_server_error() => call.failed(Unavailable::ServerError { status: s.as_u16(), error }),
        // 1xx/3xx: redirects are not followed (a followed POST could be
        // sent twice), and Google sends neither.
        s => call.failed(Unavailable::InvalidBody(format!("unexpected status {s}"))),
    }
}

/// `Retry-After` in seconds. Google does not send it on a 429; a proxy in
/// front might.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let secs: u64 = headers.get(RETRY_AFTER)?.to_str().ok()?.trim().parse().ok()?;
    Some(Duration::from_secs(secs)).filter(|d| *d <= MAX_RETRY_AFTER)
}

/// Why no (whole) answer came. A connect timeout is a connection never
/// made, so `Connect` is checked first.
pub(crate) fn transport_failure(error: &reqwest::Error) -> Unavailable {
    if error.is_connect() {
        Unavailable::Connect(error.to_string())
    } else if error.is_timeout() {
        Unavailable::Timeout
    } else {
        Unavailable::Body(error.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error_body::Quota;
    use crate::values::AppendValuesResponse;
    use reqwest::header::HeaderValue;
    use serde_json::json;

    fn answer<T: DeserializeOwned>(call: Call, status: u16, body: serde_json::Value) -> Outcome<T> {
        let body = serde_json::to_vec(&body).unwrap();
        classify(call, StatusCode::from_u16(status).unwrap(), &HeaderMap::new(), &body)
    }

    fn google(code: u16, status: &str, message: &str) -> serde_json::Value {
        GoogleError::new(code, status, message).to_body()
    }

    #[test]
    fn success_parses_the_body_and_a_bad_body_depends_on_the_call() {
        let body = json!({"spreadsheetId":"s","updates":{"updatedRange":"Sheet1!A1:B1","updatedRows":1}});
        let Outcome::Ok(r) = answer::<AppendValuesResponse>(Call::Write, 200, body) else { panic!() };
        assert_eq!(r.updates.updated_rows, 1);
        let read: Outcome<AppendValuesResponse> = answer(Call::Read, 200, json!([1]));
        assert!(matches!(read, Outcome::Unavailable { cause: Unavailable::InvalidBody(_) }), "{read:?}");
        let write: Outcome<AppendValuesResponse> = answer(Call::Write, 200, json!("x"));
        assert!(matches!(write, Outcome::OutcomeUnknown { cause: Unavailable::InvalidBody(_) }), "{write:?}");
    }

    #[test]
    fn a_quota_429_names_the_quota_for_reads_and_writes() {
        for call in [Call::Read, Call::Write] {
            let body = GoogleError::quota_exceeded(Quota::WritePerUser, 60, 7).to_body();
            let Outcome::Throttled { quota: Some(q), retry_after, error: Some(e) } = answer::<()>(call, 429, body)
            else {
                panic!("expected a named quota");
            };
            assert_eq!((q.quota, q.limit_value, retry_after), (Some(Quota::WritePerUser), Some(60), None));
            assert_eq!(e.status, "RESOURCE_EXHAUSTED");
        }
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, HeaderValue::from_static("7"));
        let proxied: Outcome<()> = classify(Call::Write, StatusCode::TOO_MANY_REQUESTS, &headers, b"busy");
        assert_eq!(proxied, Outcome::Throttled { quota: None, retry_after: Some(Duration::from_secs(7)), error: None });
        headers.insert(RETRY_AFTER, HeaderValue::from_static("86400"));
        assert_eq!(retry_after(&headers), None);
    }

    #[test]
    fn auth_access_and_missing_spreadsheets_are_told_apart() {
        let unauth = google(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.");
        assert!(matches!(answer::<()>(Call::Write, 401, unauth), Outcome::Unauthorized { error: Some(_) }));
        let denied = google(403, "PERMISSION_DENIED", "The caller does not have permission");
        assert!(matches!(answer::<()>(Call::Read, 403, denied), Outcome::Forbidden { error: Some(_) }));
        let missing = google(404, "NOT_FOUND", "Requested entity was not found.");
        let outcome = answer::<()>(Call::Write, 404, missing);
        assert!(matches!(outcome, Outcome::NotFound { missing: Missing::Spreadsheet, error: Some(_) }), "{outcome:?}");
    }

    #[test]
    fn range_400s_are_marked_and_other_400s_are_not() {
        let title = google(400, "INVALID_ARGUMENT", "Unable to parse range: 'Old'!A1");
        let outcome = answer::<()>(Call::Write, 400, title);
        assert!(matches!(outcome, Outcome::BadRequest { status: 400, range: true, .. }), "{outcome:?}");
        assert_eq!(outcome.error_kind(), Some(sluice_domain::ErrorKind::UpstreamUnavailable));
        let value = google(400, "INVALID_ARGUMENT", "Invalid values[0][0]: struct_value");
        let outcome = answer::<()>(Call::Write, 400, value);
        assert!(matches!(outcome, Outcome::BadRequest { status: 400, range: false, .. }), "{outcome:?}");
        assert_eq!(outcome.error_kind(), Some(sluice_domain::ErrorKind::InvalidRequest));
        let huge = answer::<()>(Call::Write, 413, json!("too large"));
        assert!(matches!(huge, Outcome::BadRequest { status: 413, range: false, error: None }), "{huge:?}");
    }

    #[test]
    fn server_errors_are_unavailable_for_reads_and_unknown_for_writes() {
        for status in [500, 502, 503, 504] {
            let body = google(status, "UNAVAILABLE", "The service is currently unavailable.");
            let read = answer::<()>(Call::Read, status, body.clone());
            assert!(matches!(read, Outcome::Unavailable { cause: Unavailable::ServerError { error: Some(_), .. } }));
            let write = answer::<()>(Call::Write, status, body);
            assert!(write.is_unknown(), "{write:?}");
            assert_eq!(
                write.to_string(),
                format!("write outcome unknown: HTTP {status} (UNAVAILABLE: The service is currently unavailable.)")
            );
        }
        // A 408 means the request was never read: nothing to be unsure of.
        let late = answer::<()>(Call::Write, 408, json!(null));
        assert!(matches!(late, Outcome::Unavailable { cause: Unavailable::ServerError { status: 408, .. } }));
        let redirect = answer::<()>(Call::Write, 307, json!(null));
        assert!(redirect.is_unknown(), "{redirect:?}");
        assert!(matches!(answer::<()>(Call::Read, 302, json!(null)), Outcome::Unavailable { .. }));
    }

    #[test]
    fn a_broken_body_counts_only_when_the_status_does_not_decide() {
        let broke = || Unavailable::Body("connection reset".into());
        let headers = HeaderMap::new();
        let write: Outcome<()> = body_failed(Call::Write, StatusCode::OK, &headers, broke());
        assert_eq!(write, Outcome::OutcomeUnknown { cause: broke() });
        let read: Outcome<()> = body_failed(Call::Read, StatusCode::BAD_GATEWAY, &headers, broke());
        assert_eq!(read, Outcome::Unavailable { cause: broke() });
        let throttled: Outcome<()> = body_failed(Call::Write, StatusCode::TOO_MANY_REQUESTS, &headers, broke());
        assert!(matches!(throttled, Outcome::Throttled { error: None, .. }), "{throttled:?}");
        let unauthorized: Outcome<()> = body_failed(Call::Write, StatusCode::UNAUTHORIZED, &headers, broke());
        assert_eq!(unauthorized, Outcome::Unauthorized { error: None });
    }

    #[tokio::test]
    async fn a_connection_never_made_is_unavailable_even_for_a_write() {
        // A real refused connection: the port was just free.
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let error = sluice_http::client().post(format!("http://127.0.0.1:{port}/")).send().await.unwrap_err();
        let outcome: Outcome<()> = send_failed(Call::Write, &error);
        assert!(matches!(outcome, Outcome::Unavailable { cause: Unavailable::Connect(_) }), "{outcome:?}");
        assert_eq!(outcome.error_kind(), Some(sluice_domain::ErrorKind::UpstreamUnavailable));
    }
}
