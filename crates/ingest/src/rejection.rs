//! Why a webhook was not accepted, as the sender sees it:
//!
//! ```json
//! {"error": {"code": "invalid_field", "message": "field `resource.product_no` is missing", "field": "resource.product_no"}}
//! ```
//!
//! `code` is stable (senders and alerts may match on it), `message` is for
//! people, `field` names the body path or header at fault when there is one.
//! 4xx codes mean "this request will never be accepted"; 5xx codes mean
//! "nothing was kept, send it again" and come with `Retry-After`.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use sluice_domain::FieldError;

/// The stable error codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// 401: `X-API-Key` missing or not one of the configured keys.
    Unauthorized,
    /// 403: the key is not for this route, or (rows) not for the credential
    /// or spreadsheet the row names.
    Forbidden,
    /// 413: the body is larger than the configured maximum.
    PayloadTooLarge,
    /// 400: the body is not a JSON object (or could not be read).
    InvalidJson,
    /// 400: a field (or the `X-Trace-ID` header) is missing or ill-typed.
    InvalidField,
    /// 422: `event_no` is not in the topic table.
    UnknownTopic,
    /// 422: the webhook's mall, or the row's credential, is not a tenant:
    /// sluice was never given its token (see `tenants`).
    UnknownTenant,
    /// 400: the queue refused the message as malformed (the sender's fault,
    /// e.g. a body SQS does not accept); sending it again will not help.
    QueueRefused,
    /// 503: the queue did not take the message; nothing was kept.
    QueueUnavailable,
    /// 503: Redis (gates, traces) could not be reached; nothing was kept,
    /// or, when Redis answered too late, maybe kept (the message says
    /// which); the retry is kept once either way.
    StoreUnavailable,
    /// 503: the same delivery is being accepted right now by another
    /// request whose outcome is not known yet; try again shortly.
    DeliveryInProgress,
    /// 503: ingest is already accepting `max_accepting` webhooks and rows
    /// (Redis or the queue is slow); this one was refused before it
    /// touched anything. Back-pressure: retry after `Retry-After`.
    Overloaded,
    /// 503: this request's Redis work took longer than `accept_deadline`
    /// (Redis is slow); it gave up what it held before sending, so nothing
    /// was kept. Back-pressure: retry after `Retry-After`.
    DeadlineExceeded,
    /// 404: no such route.
    NotFound,
    /// 405: the route exists, the method does not.
    MethodNotAllowed,
    /// 431: the request head (request line and headers) is larger than the
    /// configured maximum.
    HeaderTooLarge,
    /// 408: the connection did not finish sending a request head in time.
    RequestTimeout,
}

impl ErrorCode {
    pub const ALL: [ErrorCode; 17] = [
        Self::Unauthorized,
        Self::Forbidden,
        Self::PayloadTooLarge,
        Self::InvalidJson,
        Self::InvalidField,
        Self::UnknownTopic,
        Self::UnknownTenant,
        Self::QueueRefused,
        Self::QueueUnavailable,
        Self::StoreUnavailable,
        Self::DeliveryInProgress,
        Self::Overloaded,
        Self::DeadlineExceeded,
        Self::NotFound,
        Self::MethodNotAllowed,
        Self::HeaderTooLarge,
        Self::RequestTimeout,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unauthorized => "unauthorized",
            Self::Forbidden => "forbidden",
            Self::PayloadTooLarge => "payload_too_large",
            Self::InvalidJson => "invalid_json",
            Self::InvalidField => "invalid_field",
            Self::UnknownTopic => "unknown_topic",
            Self::UnknownTenant => "unknown_tenant",
            Self::QueueRefused => "queue_refused",
            Self::QueueUnavailable => "queue_unavailable",
            Self::StoreUnavailable => "store_unavailable",
            Self::DeliveryInProgress => "delivery_in_progress",
            Self::Overloaded => "overloaded",
            Self::DeadlineExceeded => "deadline_exceeded",
            Self::NotFound => "not_found",
            Self::MethodNotAllowed => "method_not_allowed",
            Self::HeaderTooLarge => "header_too_large",
            Self::RequestTimeout => "request_timeout",
        }
    }

    pub fn status(self) -> StatusCode {
        match self {
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::Forbidden => StatusCode::FORBIDDEN,
            Self::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::InvalidJson | Self::InvalidField | Self::QueueRefused => StatusCode::BAD_REQUEST,
            Self::UnknownTopic | Self::UnknownTenant => StatusCode::UNPROCESSABLE_ENTITY,
            Self::QueueUnavailable
            | Self::StoreUnavailable
            | Self::DeliveryInProgress
            | Self::Overloaded
            | Self::DeadlineExceeded => StatusCode::SERVICE_UNAVAILABLE,
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::HeaderTooLarge => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            Self::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
        }
    }
}

/// A refused request: its code, a message and the field at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", code.as_str())]
pub struct Rejection {
    pub code: ErrorCode,
    pub message: String,
    pub field: Option<String>,
}

impl Rejection {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), field: None }
    }

    /// An [`ErrorCode::InvalidField`] naming `field`.
    pub fn field(field: impl Into<String>, problem: impl std::fmt::Display) -> Self {
        let field = field.into();
        Self { code: ErrorCode::InvalidField, message: format!("field `{field}` {problem}"), field: Some(field) }
    }

    /// A domain [`FieldError`], its field named as the sender wrote it.
    pub fn from_field_error(err: &FieldError, field: &str) -> Self {
        Self::field(field, &err.problem)
    }

    /// The JSON error body, as bytes: for the server, which answers some
    /// connections before any route sees a request.
    pub fn body(&self) -> Vec<u8> {
        let body = ErrorBody {
            error: ErrorDetail { code: self.code.as_str(), message: &self.message, field: self.field.as_deref() },
        };
        serde_json::to_vec(&body).unwrap_or_else(|_| unreachable!("strings and a static code always serialise"))
    }
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    error: ErrorDetail<'a>,
}

#[derive(Serialize)]
struct ErrorDetail<'a> {
    code: &'static str,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    field: Option<&'a str>,
}

impl IntoResponse for Rejection {
    fn into_response(self) -> Response {
        let json = [(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))];
        let mut response = (self.code.status(), json, self.body()).into_response();
        if self.code.status() == StatusCode::SERVICE_UNAVAILABLE {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct_snake_case_names() {
        let mut names: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
        assert!(names.iter().all(|n| n.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')));
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ErrorCode::ALL.len());
        assert!(ErrorCode::ALL.iter().all(|c| c.status().is_client_error() || c.status().is_server_error()));
    }

    #[test]
    fn a_field_rejection_names_its_field() {
        let r = Rejection::field("resource.mall_id", "is missing");
        assert_eq!(r.code, ErrorCode::InvalidField);
        assert_eq!(r.message, "field `resource.mall_id` is missing");
        assert_eq!(r.field.as_deref(), Some("resource.mall_id"));
    }
}
