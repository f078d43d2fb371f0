//! What the Sheets sandbox answers and how the answer leaves: Google's
//! error bodies, and delivery now, after latency, after a hold, or broken
//! off mid-body.
//!
//! Every Google API error is `{"error":{"code","message","status",
//! "details"?}}` with `status` the google.rpc code name. The quota 429
//! carries an `ErrorInfo` detail (reason `RATE_LIMIT_EXCEEDED`, the quota's
//! name, metric and limit) and a `Help` link, and no `Retry-After`, as
//! Google sends it. A 401 carries an `ErrorInfo` whose reason says why
//! (`CREDENTIALS_MISSING`, `ACCESS_TOKEN_EXPIRED`, …) and a
//! `WWW-Authenticate` header. The token endpoint answers RFC 6749 errors
//! (`{"error":"invalid_grant","error_description":…}`).

use crate::sheets::oauth::{AuthFailure, OAuthRefusal};
use crate::sheets::quota::Exceeded;
use axum::Json;
use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::time::Duration;

/// The service name in error metadata.
const SERVICE: &str = "sheets.googleapis.com";
const ERROR_INFO: &str = "type.googleapis.com/google.rpc.ErrorInfo";

/// How an answer leaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// After this much latency (zero: at once).
    After(Duration),
    /// After holding it this long, past the client's timeout.
    Hold(Duration),
    /// Status and headers after this latency, then the body breaks off.
    Drop(Duration),
    /// No answer: the connection is closed after this latency.
    Close(Duration),
}

#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    body: Value,
    www_authenticate: bool,
    pub(crate) delivery: Delivery,
}

impl Answer {
    pub(crate) fn json(status: StatusCode, body: Value) -> Self {
        Self { status, body, www_authenticate: false, delivery: Delivery::After(Duration::ZERO) }
    }

    /// Google's error JSON for `status` with `message`.
    pub(crate) fn google(status: StatusCode, message: &str) -> Self {
        Self::json(status, google_error(status, message, Vec::new()))
    }

    /// An error status as an injected fault answers it: for 429 the quota
    /// body naming `quota` (the call's per-user quota), Google's usual
    /// words for the rest.
    pub(crate) fn injected(status: StatusCode, quota: Exceeded, project_number: u64) -> Self {
        let message = match status.as_u16() {
            429 => return Self::quota(quota, project_number),
            401 => return Self::unauthenticated(AuthFailure::Expired),
            400 => "Invalid request (injected by the sandbox).",
            403 => "The caller does not have permission",
            404 => "Requested entity was not found.",
            500 => "Internal error encountered.",
            502 => "Bad Gateway",
            503 => "The service is currently unavailable.",
            504 => "Deadline expired before operation could complete.",
            _ => "Error injected by the sandbox.",
        };
        Self::google(status, message)
    }

    /// The 429 for a spent quota.
    pub(crate) fn quota(exceeded: Exceeded, project_number: u64) -> Self {
        let (metric_title, limit_title) = exceeded.quota.titles();
        let message = format!(
            "Quota exceeded for quota metric '{metric_title}' and limit '{limit_title}' of service '{SERVICE}' \
             for consumer 'project_number:{project_number}'."
        );
        let details = vec![
            json!({"@type": ERROR_INFO, "reason": "RATE_LIMIT_EXCEEDED", "domain": "googleapis.com",
                   "metadata": {"service": SERVICE, "consumer": format!("projects/{project_number}"),
                                "quota_metric": exceeded.quota.metric(), "quota_limit": exceeded.quota.limit_name(),
                                "quota_limit_value": exceeded.limit.to_string(), "quota_location": "global"}}),
            json!({"@type": "type.googleapis.com/google.rpc.Help",
                   "links": [{"description": "Request a higher quota limit.",
                              "url": "https://cloud.google.com/docs/quotas/help/request_increase"}]}),
        ];
        Self::json(StatusCode::TOO_MANY_REQUESTS, google_error(StatusCode::TOO_MANY_REQUESTS, &message, details))
    }

    /// The 401 for a missing, unknown or expired access token.
    pub(crate) fn unauthenticated(failure: AuthFailure) -> Self {
        let (message, reason) = match failure {
            AuthFailure::Missing => ("Request is missing required authentication credential", "CREDENTIALS_MISSING"),
            AuthFailure::Unknown => ("Request had invalid authentication credentials", "ACCESS_TOKEN_TYPE_UNSUPPORTED"),
            AuthFailure::Expired => ("Request had invalid authentication credentials", "ACCESS_TOKEN_EXPIRED"),
        };
        let message = format!(
            "{message}. Expected OAuth 2 access token, login cookie or other valid authentication credential. \
             See https://developers.google.com/identity/sign-in/web/devconsole-project."
        );
        let details = vec![json!({"@type": ERROR_INFO, "reason": reason, "domain": "googleapis.com",
                                  "metadata": {"service": SERVICE, "method": "google.apps.sheets.v4.SpreadsheetsService"}})];
        let mut answer =
            Self::json(StatusCode::UNAUTHORIZED, google_error(StatusCode::UNAUTHORIZED, &message, details));
        answer.www_authenticate = true;
        answer
    }

    /// A token endpoint refusal.
    pub(crate) fn oauth(refusal: &OAuthRefusal) -> Self {
        let status = StatusCode::from_u16(refusal.status).unwrap_or(StatusCode::BAD_REQUEST);
        Self::json(status, json!({"error": refusal.error, "error_description": refusal.description}))
    }

    pub(crate) fn after(mut self, delivery: Delivery) -> Self {
        self.delivery = delivery;
        self
    }

    /// Sends the answer as its delivery says. The wait happens here, after
    /// the state's lock was released, on this request's own task: a held
    /// answer holds up nothing else.
    pub(crate) async fn deliver(self) -> Response {
        let (wait, broken) = match self.delivery {
            Delivery::After(d) | Delivery::Hold(d) | Delivery::Close(d) => (d, false),
            Delivery::Drop(d) => (d, true),
        };
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        if let Delivery::Close(_) = self.delivery {
            let mut response = StatusCode::INTERNAL_SERVER_ERROR.into_response();
            response.extensions_mut().insert(crate::server::HangUpNow);
            return response;
        }
        let mut response = if broken {
            let chunks: [Result<Bytes, std::io::Error>; 2] = [
                Ok(Bytes::from_static(b"{\"spreadsheetId\":")),
                Err(std::io::Error::other("sandbox dropped the connection")),
            ];
            let mut r = Response::new(Body::from_stream(futures::stream::iter(chunks)));
            *r.status_mut() = self.status;
            r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json; charset=UTF-8"));
            r
        } else {
            (self.status, Json(self.body)).into_response()
        };
        if self.www_authenticate {
            let value =
                HeaderValue::from_static("Bearer realm=\"https://accounts.google.com/\", error=\"invalid_token\"");
            response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }
}

/// `{"error":{…}}` for `status`.
fn google_error(status: StatusCode, message: &str, details: Vec<Value>) -> Value {
    let mut error = json!({"code": status.as_u16(), "message": message, "status": rpc_status(status)});
    if !details.is_empty() {
        error["details"] = Value::Array(details);
    }
    json!({ "error": error })
}

/// The google.rpc code name Google pairs with an HTTP status.
fn rpc_status(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        409 => "ABORTED",
        412 => "FAILED_PRECONDITION",
        429 => "RESOURCE_EXHAUSTED",
        499 => "CANCELLED",
        500 => "INTERNAL",
        501 => "UNIMPLEMENTED",
        503 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        _ => "UNKNOWN",
    }
}
