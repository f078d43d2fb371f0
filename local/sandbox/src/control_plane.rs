//! What the sandboxes' control planes share: JSON bodies in, JSON out, and
//! a failure answered `{"error": "…"}` with the status its kind calls for.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serializer};
use serde_json::json;
use std::time::Duration;

pub(crate) type Body<T> = Result<Json<T>, JsonRejection>;

/// A sandbox's error, as its control plane answers it.
pub(crate) trait ControlError: std::fmt::Display {
    /// The status its kind calls for.
    fn status(&self) -> StatusCode;
}

/// A control-plane failure: `{"error": "…"}` with the status its kind
/// calls for.
#[derive(Debug)]
pub(crate) struct Fail {
    status: StatusCode,
    message: String,
}

impl<E: ControlError> From<E> for Fail {
    fn from(e: E) -> Self {
        Self { status: e.status(), message: e.to_string() }
    }
}

impl IntoResponse for Fail {
    fn into_response(self) -> Response {
        (self.status, Json(json!({ "error": self.message }))).into_response()
    }
}

pub(crate) type Answer = Result<Response, Fail>;

/// The request's JSON body; one that cannot be read is invalid input, in
/// the words of each sandbox's `SandboxError::InvalidInput`.
pub(crate) fn body<T>(body: Body<T>) -> Result<T, Fail> {
    body.map(|Json(v)| v).map_err(|e| Fail {
        status: StatusCode::BAD_REQUEST,
        message: format!("invalid input: body: {}", e.body_text()),
    })
}

pub(crate) fn ok<T: serde::Serialize>(status: StatusCode, value: T) -> Answer {
    Ok((status, Json(value)).into_response())
}

/// `?after=SEQ` of `GET …/calls`: the call records after that sequence.
#[derive(Debug, Deserialize)]
pub(crate) struct After {
    #[serde(default)]
    pub(crate) after: u64,
}

/// A call record's time as fractional seconds.
pub(crate) fn secs<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}
