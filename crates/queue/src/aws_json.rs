//! The AWS JSON 1.0 protocol as a server speaks it: the operation in
//! `X-Amz-Target: <Service>.<Operation>`, the request a JSON object (an
//! empty body is an empty request), the answer JSON with `Content-Type:
//! application/x-amz-json-1.0` and a request id. The SQS endpoint
//! ([`crate::sqs_api`]) and `sluice dev`'s Step Functions endpoint
//! (`sluice_local::sfn_api`) both speak it; each keeps its own error shape.

use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
use serde_json::Value;

pub const CONTENT_TYPE: &str = "application/x-amz-json-1.0";

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
pub fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, serde_json::Error> {
    let body = if body.iter().all(u8::is_ascii_whitespace) { b"{}".as_slice() } else { body };
    serde_json::from_slice(body)
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
        let empty: serde_json::Map<String, Value> = parse(b" \n").unwrap();
        assert!(empty.is_empty());
        assert!(parse::<Value>(b"{").is_err());
    }
}
