//! What the Sheets sandbox answers: Google's error bodies (how an answer
//! leaves is [`crate::server::Delivery`]).
//!
//! Every Google API error is `{"error":{"code","message","status",
//! "details"?}}` with `status` the google.rpc code name. The quota 429
//! carries an `ErrorInfo` detail (reason `RATE_LIMIT_EXCEEDED`, the quota's
//! name, metric and limit) and a `Help` link, and no `Retry-After`, as
//! Google sends it. A 401 carries an `ErrorInfo` whose reason says why
//! (`CREDENTIALS_MISSING`, `ACCESS_TOKEN_EXPIRED`, …) and a
//! `WWW-Authenticate` header. The token endpoint answers RFC 6749 errors
//! (`{"error":"invalid_grant","error_description":…}`).

use crate::server::{Answer, Broken};
use crate::sheets::oauth::{AuthFailure, OAuthRefusal};
use crate::sheets::quota::Exceeded;
use axum::http::StatusCode;
use serde_json::{Value, json};

/// The service name in error metadata.
const SERVICE: &str = "sheets.googleapis.com";
const ERROR_INFO: &str = "type.googleapis.com/google.rpc.ErrorInfo";

/// How a broken-off Sheets API answer starts.
pub(crate) const BROKEN: Broken = (b"{\"spreadsheetId\":", "application/json; charset=UTF-8");

impl Answer {
    /// Google's error JSON for `status` with `message`.
    pub(crate) fn google(status: StatusCode, message: &str) -> Self {
        Self::json(status, google_error(status, message, Vec::new()))
    }

    /// An error status as an injected fault answers it: for 429 the quota
    /// body naming `quota` (the call's per-user quota), Google's usual
    /// words for the rest.
    pub(crate) fn injected(status: u16, quota: Exceeded, project_number: u64) -> Self {
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
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
        let challenge = "Bearer realm=\"https://accounts.google.com/\", error=\"invalid_token\"";
        answer.headers.push(("www-authenticate", challenge.to_owned()));
        answer
    }

    /// A token endpoint refusal.
    pub(crate) fn oauth_refusal(refusal: &OAuthRefusal) -> Self {
        let status = StatusCode::from_u16(refusal.status).unwrap_or(StatusCode::BAD_REQUEST);
        Self::json(status, json!({"error": refusal.error, "error_description": refusal.description}))
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
