//! SQS's error shape. SQS speaks AWS JSON 1.0 but kept its older Query
//! protocol's error codes, and SDKs read both: the body carries the error
//! shape's name, and the `x-amzn-query-error` header carries the Query code
//! and whether the sender is at fault, e.g.
//!
//! ```text
//! HTTP/1.1 400 Bad Request
//! x-amzn-query-error: AWS.SimpleQueueService.NonExistentQueue;Sender
//! Content-Type: application/x-amz-json-1.0
//!
//! {"__type":"com.amazonaws.sqs#QueueDoesNotExist","message":"The specified queue does not exist."}
//! ```
//!
//! The Rust SDK matches typed errors on the header's code, so both must be
//! exactly SQS's. Status codes and Query codes follow SQS's service model
//! (`awsQueryError` traits); the generic errors (`InvalidParameterValue`,
//! `MissingParameter`) are AWS's common errors, not part of SQS's model.

use crate::error::QueueError;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use sluice_domain::queue::rules::RuleViolation;

use super::MAX_REQUEST_BYTES;
use crate::aws_json::{CONTENT_TYPE, ServiceError};

/// An SQS error response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApiError {
    pub(crate) status: StatusCode,
    /// The body's `__type`.
    pub(crate) shape: &'static str,
    /// The Query code of `x-amzn-query-error`.
    pub(crate) code: &'static str,
    /// `Receiver` for our own faults, `Sender` for the caller's.
    pub(crate) sender_fault: bool,
    pub(crate) message: String,
}

/// A constructor of a sender's error: `400 Bad Request` unless a status is
/// given. `sqs "X"` is SQS's own shape `com.amazonaws.sqs#X` with the Query
/// code `X`; `legacy "X"` the same shape with the older Query code
/// `AWS.SimpleQueueService.X`; otherwise shape and code are written out.
macro_rules! sqs_error {
    ($fn:ident, sqs $name:literal) => {
        sqs_error!($fn, sqs $name, StatusCode::BAD_REQUEST);
    };
    ($fn:ident, sqs $name:literal, $status:expr) => {
        sqs_error!($fn, $status, concat!("com.amazonaws.sqs#", $name), $name);
    };
    ($fn:ident, legacy $name:literal) => {
        sqs_error!(
            $fn,
            StatusCode::BAD_REQUEST,
            concat!("com.amazonaws.sqs#", $name),
            concat!("AWS.SimpleQueueService.", $name)
        );
    };
    ($fn:ident, $shape:literal, $code:literal) => {
        sqs_error!($fn, StatusCode::BAD_REQUEST, $shape, $code);
    };
    ($fn:ident, $status:expr, $shape:expr, $code:expr) => {
        pub(crate) fn $fn(message: impl Into<String>) -> Self {
            Self { status: $status, shape: $shape, code: $code, sender_fault: true, message: message.into() }
        }
    };
}

impl ApiError {
    sqs_error!(queue_does_not_exist, "com.amazonaws.sqs#QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue");
    sqs_error!(queue_name_exists, "com.amazonaws.sqs#QueueNameExists", "QueueAlreadyExists");
    sqs_error!(invalid_parameter, "com.amazon.coral.service#InvalidParameterValueException", "InvalidParameterValue");
    sqs_error!(missing_parameter, "com.amazon.coral.service#MissingParameterException", "MissingParameter");
    sqs_error!(invalid_attribute_name, sqs "InvalidAttributeName");
    sqs_error!(invalid_attribute_value, sqs "InvalidAttributeValue");
    sqs_error!(receipt_handle_is_invalid, sqs "ReceiptHandleIsInvalid", StatusCode::NOT_FOUND);
    sqs_error!(invalid_message_contents, sqs "InvalidMessageContents");
    sqs_error!(empty_batch_request, legacy "EmptyBatchRequest");
    sqs_error!(too_many_entries, legacy "TooManyEntriesInBatchRequest");
    sqs_error!(batch_entry_ids_not_distinct, legacy "BatchEntryIdsNotDistinct");
    sqs_error!(invalid_batch_entry_id, legacy "InvalidBatchEntryId");
    sqs_error!(batch_request_too_long, legacy "BatchRequestTooLong");
    sqs_error!(unsupported_operation, legacy "UnsupportedOperation");
    sqs_error!(resource_not_found, sqs "ResourceNotFoundException", StatusCode::NOT_FOUND);
    sqs_error!(unknown_operation, "com.amazon.coral.service#UnknownOperationException", "InvalidAction");
    sqs_error!(serialization, "com.amazon.coral.service#SerializationException", "SerializationException");

    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            shape: "com.amazon.coral.service#InternalFailure",
            code: "InternalFailure",
            sender_fault: false,
            message: message.into(),
        }
    }

    /// The error for a request missing a required member.
    pub(crate) fn missing(member: &str) -> Self {
        Self::missing_parameter(format!("The request must contain the parameter {member}."))
    }

    /// SQS's wording for a parameter out of range.
    pub(crate) fn invalid_value(parameter: &str, value: impl std::fmt::Display, reason: &str) -> Self {
        Self::invalid_parameter(format!("Value {value} for parameter {parameter} is invalid. Reason: {reason}"))
    }

    /// The short code a failed batch entry carries (`Failed[].Code`).
    pub(crate) fn entry_code(&self) -> &'static str {
        // Batch entries carry the shape name, without namespace.
        self.shape.rsplit('#').next().unwrap_or(self.shape).trim_end_matches("Exception")
    }
}

impl From<RuleViolation> for ApiError {
    fn from(violation: RuleViolation) -> Self {
        let message = violation.to_string();
        match violation {
            RuleViolation::InvalidCharacter { .. } => Self::invalid_message_contents(message),
            RuleViolation::EmptyBatch => Self::empty_batch_request(message),
            RuleViolation::TooManyEntries { .. } => Self::too_many_entries(message),
            RuleViolation::EntryIdsNotDistinct { .. } => Self::batch_entry_ids_not_distinct(message),
            RuleViolation::InvalidEntryId { .. } => Self::invalid_batch_entry_id(message),
            RuleViolation::BatchTooLong { .. } => Self::batch_request_too_long(message),
            _ => Self::invalid_parameter(message),
        }
    }
}

impl From<QueueError> for ApiError {
    fn from(err: QueueError) -> Self {
        match err {
            QueueError::QueueDoesNotExist(_) => Self::queue_does_not_exist("The specified queue does not exist."),
            QueueError::QueueNameExists { attribute, .. } => Self::queue_name_exists(format!(
                "A queue already exists with the same name and a different value for attribute {attribute}"
            )),
            QueueError::InvalidParameter(message) => Self::invalid_parameter(message),
            // The endpoint picks the send by the queue's kind, so this is a
            // port's mistake reaching here; it is still the sender's.
            err @ QueueError::WrongKind { .. } => Self::invalid_parameter(err.to_string()),
            QueueError::Rule(violation) => violation.into(),
            QueueError::InvalidReceipt(handle) => Self::receipt_handle_is_invalid(format!(
                "The input receipt handle \"{handle}\" is not a valid receipt handle."
            )),
            // SQS's own words for it (see `receive_attempt`).
            QueueError::AttemptNotRetryable(id) => Self::invalid_value(
                "ReceiveRequestAttemptId",
                id,
                "The receiveRequestAttemptId is not valid anymore since the receive call is not retryable.",
            ),
            QueueError::NotInFlight => Self::invalid_parameter(
                "Value for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for \
                 visibility timeout change.",
            ),
            err @ (QueueError::Redis(_) | QueueError::UnexpectedReply { .. } | QueueError::ConsumerLeaseLost) => {
                tracing::error!(error = %err, "embedded queue failed");
                Self::internal(format!("The embedded queue failed: {err}"))
            }
        }
    }
}

impl ServiceError for ApiError {
    fn serialization(message: String) -> Self {
        Self::serialization(message)
    }

    /// SQS's model has no shape for it (its front door refuses such
    /// requests before the service sees them): the generic AWS one, with
    /// HTTP's 413.
    fn too_large() -> Self {
        Self {
            status: StatusCode::PAYLOAD_TOO_LARGE,
            shape: "com.amazon.coral.service#RequestEntityTooLargeException",
            code: "RequestEntityTooLarge",
            sender_fault: true,
            message: format!(
                "The request body is larger than {MAX_REQUEST_BYTES} bytes, more than any SQS request needs."
            ),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "__type": self.shape, "message": self.message }).to_string();
        let fault = if self.sender_fault { "Sender" } else { "Receiver" };
        let mut response = (self.status, body).into_response();
        let headers = response.headers_mut();
        headers.insert("content-type", HeaderValue::from_static(CONTENT_TYPE));
        if let Ok(value) = HeaderValue::from_str(&format!("{};{fault}", self.code)) {
            headers.insert("x-amzn-query-error", value);
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_entry_codes_are_bare_shape_names() {
        assert_eq!(ApiError::invalid_parameter("x").entry_code(), "InvalidParameterValue");
        assert_eq!(ApiError::invalid_message_contents("x").entry_code(), "InvalidMessageContents");
        assert_eq!(ApiError::missing("MessageGroupId").entry_code(), "MissingParameter");
    }
}
