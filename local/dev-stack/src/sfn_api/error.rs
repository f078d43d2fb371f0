//! Step Functions' error shape (AWS JSON 1.0): HTTP 400 for the caller's
//! faults, 500 for ours, and a body naming the error, e.g.
//!
//! ```text
//! HTTP/1.1 400 Bad Request
//! Content-Type: application/x-amz-json-1.0
//!
//! {"__type":"ExecutionDoesNotExist","message":"Execution Does Not Exist: 'arn:aws:states:…'"}
//! ```
//!
//! SDKs match typed errors on `__type` (after any `namespace#`), so each
//! code is exactly Step Functions' (its API reference lists them per
//! operation); the messages follow its wording.

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use sluice_sqs_emulator::aws_json::{CONTENT_TYPE, ServiceError};

/// A Step Functions error response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApiError {
    pub(crate) status: StatusCode,
    /// The body's `__type`.
    pub(crate) code: &'static str,
    pub(crate) message: String,
}

macro_rules! sfn_error {
    ($fn:ident, $code:literal) => {
        pub(crate) fn $fn(message: impl Into<String>) -> Self {
            Self { status: StatusCode::BAD_REQUEST, code: $code, message: message.into() }
        }
    };
}

impl ApiError {
    sfn_error!(invalid_arn, "InvalidArn");
    sfn_error!(invalid_name, "InvalidName");
    sfn_error!(invalid_execution_input, "InvalidExecutionInput");
    sfn_error!(invalid_token, "InvalidToken");
    sfn_error!(state_machine_does_not_exist, "StateMachineDoesNotExist");
    sfn_error!(execution_does_not_exist, "ExecutionDoesNotExist");
    sfn_error!(execution_already_exists, "ExecutionAlreadyExists");
    sfn_error!(validation, "ValidationException");
    sfn_error!(unknown_operation, "UnknownOperationException");
    sfn_error!(serialization, "SerializationException");

    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Self { status: StatusCode::INTERNAL_SERVER_ERROR, code: "InternalFailure", message: message.into() }
    }

    /// The error for a request missing a required member, in the words of
    /// AWS's request validation.
    pub(crate) fn missing(member: &str) -> Self {
        Self::validation(format!(
            "1 validation error detected: Value null at '{member}' failed to satisfy constraint: Member must not be \
             null"
        ))
    }
}

impl ServiceError for ApiError {
    fn serialization(message: String) -> Self {
        Self::serialization(message)
    }

    /// axum's 2 MB default limit.
    fn too_large() -> Self {
        Self::validation(
            "The request body is larger than this endpoint reads (2 MB); Step Functions takes at most 256 KiB of \
             execution input",
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "__type": self.code, "message": self.message }).to_string();
        let mut response = (self.status, body).into_response();
        response.headers_mut().insert("content-type", HeaderValue::from_static(CONTENT_TYPE));
        response
    }
}
