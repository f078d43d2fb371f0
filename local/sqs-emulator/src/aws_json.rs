//! The AWS JSON 1.0 protocol as a server speaks it: the operation in
//! `X-Amz-Target: <Service>.<Operation>`, the request a JSON object (an
//! empty body is an empty request), the answer JSON with `Content-Type:
//! application/x-amz-json-1.0` and a request id. The SQS endpoint
//! ([`crate::sqs_api`]) and `sluice dev`'s Step Functions endpoint
//! (`sluice_dev_stack::sfn_api`) both speak it; each keeps its own error shape
//! ([`ServiceError`]).

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, FailedToBufferBody};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::future::Future;

pub const CONTENT_TYPE: &str = "application/x-amz-json-1.0";

/// A service's own error shape, for the refusals the protocol makes.
pub trait ServiceError: IntoResponse {
    /// A request body that is not the JSON an operation takes.
    fn serialization(message: String) -> Self;
    /// A request body larger than the endpoint reads.
    fn too_large() -> Self;
}

/// Why a request names no operation of the service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetError {
    /// No `X-Amz-Target` header (or not text).
    Missing,
    /// A target of another service: the header's value.
    OtherService(String),
}

/// The operation `X-Amz-Target` names for `service` (`AmazonSQS`,
/// `AWSStepFunctions`).
pub fn operation<'h>(headers: &'h HeaderMap, service: &str) -> Result<&'h str, TargetError> {
    let target = headers.get("x-amz-target").and_then(|v| v.to_str().ok()).ok_or(TargetError::Missing)?;
    target
        .strip_prefix(service)
        .and_then(|rest| rest.strip_prefix('.'))
        .ok_or_else(|| TargetError::OtherService(target.to_owned()))
}

/// Parses a request body; an empty (or blank) body is an empty request.
pub fn parse<T: DeserializeOwned, E: ServiceError>(body: &[u8]) -> Result<T, E> {
    let body = if body.iter().all(u8::is_ascii_whitespace) { b"{}".as_slice() } else { body };
    serde_json::from_slice(body).map_err(|e| E::serialization(format!("The request body is not valid: {e}")))
}

/// Answers one request with what `dispatch` makes of its body. A body that
/// could not be read (too large, or its framing broken) is answered in the
/// service's error shape, as its other refusals are, rather than axum's
/// plain text: an SDK would otherwise report an unparseable error instead
/// of the reason.
pub async fn answer<E: ServiceError, F: Future<Output = Result<Value, E>>>(
    body: Result<Bytes, BytesRejection>,
    dispatch: impl FnOnce(Bytes) -> F,
) -> Response {
    respond(match body {
        Ok(body) => dispatch(body).await,
        Err(BytesRejection::FailedToBufferBody(FailedToBufferBody::LengthLimitError(_))) => Err(E::too_large()),
        Err(other) => Err(E::serialization(format!("The request body could not be read: {other}"))),
    })
}

/// The answer to a request: the operation's result as `200` JSON, or the
/// error's own response; either with a fresh `x-amzn-requestid`.
pub fn respond<E: IntoResponse>(result: Result<Value, E>) -> Response {
    let mut response = match result {
        Ok(value) => {
            let mut response = (StatusCode::OK, value.to_string()).into_response();
            response.headers_mut().insert("content-type", HeaderValue::from_static(CONTENT_TYPE));
            response
        }
        Err(err) => err.into_response(),
    };
    if let Ok(id) = HeaderValue::from_str(&uuid::Uuid::new_v4().to_string()) {
        response.headers_mut().insert("x-amzn-requestid", id);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_operation_is_the_targets_part_after_the_service() {
        let mut headers = HeaderMap::new();
        assert_eq!(operation(&headers, "AmazonSQS"), Err(TargetError::Missing));
        headers.insert("x-amz-target", HeaderValue::from_static("AmazonSQS.SendMessage"));
        assert_eq!(operation(&headers, "AmazonSQS"), Ok("SendMessage"));
        assert_eq!(
            operation(&headers, "AWSStepFunctions"),
            Err(TargetError::OtherService("AmazonSQS.SendMessage".into()))
        );
        headers.insert("x-amz-target", HeaderValue::from_static("AmazonSQSX.SendMessage"));
        assert!(operation(&headers, "AmazonSQS").is_err());
    }

    #[test]
    fn a_blank_body_is_an_empty_request() {
        type Refusal = crate::sqs_api::error::ApiError;
        let empty: serde_json::Map<String, Value> = parse::<_, Refusal>(b" \n").unwrap();
        assert!(empty.is_empty());
        assert!(parse::<Value, Refusal>(b"{").is_err());
    }
}
