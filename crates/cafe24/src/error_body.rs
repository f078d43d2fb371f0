//! The two error body shapes Cafe24 answers with.
//!
//! - The Admin API: `{"error":{"code":…,"message":…,"more_info":{}}}`
//!   (Cafe24's reference shows it exactly so). Whether `code` is a number or
//!   a string the reference does not say (its example is the placeholder
//!   `"error code"`), so both are accepted and kept as text.
//! - The token endpoint (`/api/v2/oauth/token`) is an OAuth 2.0 endpoint and
//!   answers errors in RFC 6749 §5.2 form:
//!   `{"error":"invalid_grant","error_description":…}`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// An Admin API error body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cafe24Error {
    #[serde(deserialize_with = "code_as_text")]
    pub code: String,
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub more_info: Value,
}

#[derive(Deserialize)]
struct Envelope {
    error: Cafe24Error,
}

impl Cafe24Error {
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self { code: code.into(), message: message.into(), more_info: Value::Object(Default::default()) }
    }

    /// Parses `{"error":{…}}`; `None` when the body is not that shape.
    pub fn parse(body: &[u8]) -> Option<Self> {
        serde_json::from_slice::<Envelope>(body).ok().map(|e| e.error)
    }

    /// The wire body, with a numeric `code` when the code is a number (as
    /// the sandbox answers).
    pub fn to_body(&self) -> Value {
        let code = self.code.parse::<u64>().map(Value::from).unwrap_or_else(|_| Value::from(self.code.clone()));
        serde_json::json!({ "error": { "code": code, "message": self.message, "more_info": self.more_info } })
    }
}

/// `code: message`, as an unavailable answer quotes it.
impl std::fmt::Display for Cafe24Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

fn code_as_text<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    match Value::deserialize(deserializer)? {
        Value::String(s) => Ok(s),
        Value::Number(n) => Ok(n.to_string()),
        other => Err(serde::de::Error::custom(format!("error code must be a string or number, got {other}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_numeric_and_string_codes() {
        let body = br#"{"error":{"code":429,"message":"Too many requests","more_info":{}}}"#;
        let e = Cafe24Error::parse(body).unwrap();
        assert_eq!((e.code.as_str(), e.message.as_str()), ("429", "Too many requests"));
        let body = br#"{"error":{"code":"error code","message":"m","more_info":{"a":1}}}"#;
        let e = Cafe24Error::parse(body).unwrap();
        assert_eq!(e.code, "error code");
        assert_eq!(e.more_info["a"], 1);
        let e = Cafe24Error::parse(br#"{"error":{"code":404}}"#).unwrap();
        assert_eq!((e.code.as_str(), e.message.as_str()), ("404", ""));
    }

    #[test]
    fn other_shapes_are_not_cafe24_errors() {
        for body in [&b"not json"[..], b"{}", br#"{"error":"invalid_grant"}"#, br#"{"error":{"code":[1]}}"#] {
            assert_eq!(Cafe24Error::parse(body), None);
        }
    }

    #[test]
    fn round_trips_through_its_wire_body() {
        let e = Cafe24Error::new("401", "Authority to access is not valid.");
        let body = serde_json::to_vec(&e.to_body()).unwrap();
        assert_eq!(e.to_body()["error"]["code"], 401);
        assert_eq!(Cafe24Error::parse(&body), Some(e));
    }
}
