//! Google's error body and the quota facts inside a 429.
//!
//! Every Google API answers errors as
//! `{"error":{"code":…,"message":…,"status":…,"details":[…]}}`
//! (`status` is the google.rpc code name: `RESOURCE_EXHAUSTED`,
//! `UNAUTHENTICATED`, `PERMISSION_DENIED`, `NOT_FOUND`, `INVALID_ARGUMENT`,
//! `INTERNAL`, `UNAVAILABLE`). A quota 429 from the Sheets API, as users
//! have posted it:
//!
//! ```json
//! {"error": {"code": 429,
//!   "message": "Quota exceeded for quota metric 'Write requests' and limit 'Write requests per minute per user' of service 'sheets.googleapis.com' for consumer 'project_number:…'.",
//!   "status": "RESOURCE_EXHAUSTED",
//!   "details": [
//!     {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "RATE_LIMIT_EXCEEDED",
//!      "domain": "googleapis.com",
//!      "metadata": {"service": "sheets.googleapis.com", "consumer": "projects/…",
//!        "quota_metric": "sheets.googleapis.com/write_requests",
//!        "quota_limit": "WriteRequestsPerMinutePerUser", "quota_limit_value": "60",
//!        "quota_location": "global"}},
//!     {"@type": "type.googleapis.com/google.rpc.Help", "links": [{"description": "Request a higher quota limit.", "url": "…"}]}]}}
//! ```
//!
//! There is no `Retry-After` header and no wait in the body; Google's usage
//! limits page says the per-minute quotas are refilled every minute and
//! "after 1 minute, you can execute requests again".

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The `@type` of the detail that carries `reason` and `metadata`.
pub const ERROR_INFO_TYPE: &str = "type.googleapis.com/google.rpc.ErrorInfo";

/// A Google API error body (the object under `error`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GoogleError {
    pub code: u16,
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub status: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<Value>,
}

#[derive(Deserialize)]
struct Envelope {
    error: GoogleError,
}

impl GoogleError {
    /// Parses `{"error":{…}}`; `None` for any other body.
    pub fn parse(body: &[u8]) -> Option<Self> {
        serde_json::from_slice::<Envelope>(body).ok().map(|e| e.error)
    }

    fn error_info(&self) -> Option<&Map<String, Value>> {
        self.details
            .iter()
            .filter_map(Value::as_object)
            .find(|d| d.get("@type").and_then(Value::as_str) == Some(ERROR_INFO_TYPE))
    }

    /// The `reason` of the `ErrorInfo` detail (`RATE_LIMIT_EXCEEDED`,
    /// `ACCESS_TOKEN_EXPIRED`, …).
    pub fn reason(&self) -> Option<&str> {
        self.error_info()?.get("reason")?.as_str()
    }

    /// Which quota a 429 names, read from the `ErrorInfo` metadata.
    pub fn quota(&self) -> Option<QuotaViolation> {
        let metadata = self.error_info()?.get("metadata")?.as_object()?;
        let text = |key: &str| metadata.get(key).and_then(Value::as_str).map(str::to_owned);
        let limit = text("quota_limit")?;
        Some(QuotaViolation {
            quota: Quota::from_limit_name(&limit),
            limit_value: text("quota_limit_value").and_then(|v| v.parse().ok()),
            metric: text("quota_metric"),
            limit,
        })
    }

    /// A 400 about the range itself: the sheet title does not exist (the
    /// sheet was renamed or deleted) or the range is outside the grid.
    pub fn is_range_error(&self) -> bool {
        self.code == 400
            && (self.message.starts_with(UNABLE_TO_PARSE_RANGE) || self.message.contains(EXCEEDS_GRID_LIMITS))
    }

    /// A 400 saying the range names no sheet of the spreadsheet.
    pub fn is_unknown_title(&self) -> bool {
        self.code == 400 && self.message.starts_with(UNABLE_TO_PARSE_RANGE)
    }
}

/// `status: message` (`UNAVAILABLE: The service is currently
/// unavailable.`), as an unavailable answer quotes it.
impl std::fmt::Display for GoogleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.status, self.message)
    }
}

/// How a 400 for an unknown sheet title begins (`Unable to parse range:
/// Sheet9!A1`).
pub const UNABLE_TO_PARSE_RANGE: &str = "Unable to parse range: ";
/// What a 400 for a range beyond the sheet's rows or columns says.
pub const EXCEEDS_GRID_LIMITS: &str = "exceeds grid limits";

/// The four Sheets API request quotas (Google's usage limits page: read and
/// write requests, each 300 a minute per project and 60 a minute per user
/// per project).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Quota {
    WritePerUser,
    WritePerProject,
    ReadPerUser,
    ReadPerProject,
}

impl Quota {
    pub const ALL: [Quota; 4] = [Self::WritePerUser, Self::WritePerProject, Self::ReadPerUser, Self::ReadPerProject];

    /// `quota_limit` in the error metadata.
    pub fn limit_name(self) -> &'static str {
        match self {
            Self::WritePerUser => "WriteRequestsPerMinutePerUser",
            Self::WritePerProject => "WriteRequestsPerMinutePerProject",
            Self::ReadPerUser => "ReadRequestsPerMinutePerUser",
            Self::ReadPerProject => "ReadRequestsPerMinutePerProject",
        }
    }

    pub fn is_write(self) -> bool {
        matches!(self, Self::WritePerUser | Self::WritePerProject)
    }

    pub fn from_limit_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|q| q.limit_name() == name)
    }
}

/// The quota a 429 names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaViolation {
    /// Which of the four, when the limit name is one we know.
    pub quota: Option<Quota>,
    /// `quota_limit` as sent.
    pub limit: String,
    /// `quota_limit_value`, the requests allowed per minute.
    pub limit_value: Option<u64>,
    pub metric: Option<String>,
}

/// The writing side, which only tests need: sluice reads Google's errors,
/// and these build them as Google sends them.
#[cfg(test)]
mod build {
    use super::*;
    use serde_json::json;

    /// The `@type` of the detail with links to help.
    const HELP_TYPE: &str = "type.googleapis.com/google.rpc.Help";
    /// The service name in error metadata.
    const SHEETS_SERVICE: &str = "sheets.googleapis.com";

    impl GoogleError {
        pub(crate) fn new(code: u16, status: impl Into<String>, message: impl Into<String>) -> Self {
            Self { code, message: message.into(), status: status.into(), details: Vec::new() }
        }

        /// Adds a `google.rpc.ErrorInfo` detail.
        pub(crate) fn with_error_info(mut self, reason: &str, metadata: Value) -> Self {
            self.details.push(json!({"@type": ERROR_INFO_TYPE, "reason": reason, "domain": "googleapis.com",
                                     "metadata": metadata}));
            self
        }

        /// The wire body.
        pub(crate) fn to_body(&self) -> Value {
            json!({ "error": self })
        }

        /// The 429 the Sheets API answers when `quota` is spent.
        pub(crate) fn quota_exceeded(quota: Quota, limit_value: u64, project_number: u64) -> Self {
            let message = format!(
                "Quota exceeded for quota metric '{}' and limit '{}' of service '{SHEETS_SERVICE}' for consumer \
                 'project_number:{project_number}'.",
                quota.metric_title(),
                quota.limit_title()
            );
            let metadata = json!({"service": SHEETS_SERVICE, "consumer": format!("projects/{project_number}"),
                                  "quota_metric": quota.metric(), "quota_limit": quota.limit_name(),
                                  "quota_limit_value": limit_value.to_string(), "quota_location": "global"});
            let mut error =
                Self::new(429, "RESOURCE_EXHAUSTED", message).with_error_info("RATE_LIMIT_EXCEEDED", metadata);
            error.details.push(json!({"@type": HELP_TYPE, "links": [{"description": "Request a higher quota limit.",
                "url": "https://cloud.google.com/docs/quotas/help/request_increase"}]}));
            error
        }
    }

    impl Quota {
        /// `quota_metric` in the error metadata.
        pub(crate) fn metric(self) -> &'static str {
            if self.is_write() { "sheets.googleapis.com/write_requests" } else { "sheets.googleapis.com/read_requests" }
        }

        fn metric_title(self) -> &'static str {
            if self.is_write() { "Write requests" } else { "Read requests" }
        }

        fn limit_title(self) -> &'static str {
            match self {
                Self::WritePerUser => "Write requests per minute per user",
                Self::WritePerProject => "Write requests per minute",
                Self::ReadPerUser => "Read requests per minute per user",
                Self::ReadPerProject => "Read requests per minute",
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_posted_quota_error() {
        // As posted in an issue (Sage-Bionetworks/data_curator#110), in JSON.
        // JSON strings cannot hold a raw line break, so the message is split
        // outside the literal.
        let body =
            br#"{"error":{"code":429,"message":"Quota exceeded for quota metric 'Write requests' and limit 'Write"#;
        let rest =
            br#" requests per minute per user' of service 'sheets.googleapis.com' for consumer 'project_number:1'.",
            "status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo",
            "reason":"RATE_LIMIT_EXCEEDED","domain":"googleapis.com","metadata":{"consumer":"projects/1",
            "quota_limit":"WriteRequestsPerMinutePerUser","quota_metric":"sheets.googleapis.com/write_requests",
            "service":"sheets.googleapis.com"}}]}}"#;
        let e = GoogleError::parse(&[&body[..], &rest[..]].concat()).unwrap();
        assert!(e.message.contains("limit 'Write requests per minute per user' of"), "{}", e.message);
        assert_eq!((e.code, e.status.as_str(), e.reason()), (429, "RESOURCE_EXHAUSTED", Some("RATE_LIMIT_EXCEEDED")));
        let q = e.quota().unwrap();
        assert_eq!((q.quota, q.limit_value), (Some(Quota::WritePerUser), None));
    }

    #[test]
    fn builds_what_it_reads() {
        for quota in Quota::ALL {
            let e = GoogleError::quota_exceeded(quota, 300, 42);
            let back = GoogleError::parse(&serde_json::to_vec(&e.to_body()).unwrap()).unwrap();
            assert_eq!(back, e);
            let q = back.quota().unwrap();
            assert_eq!((q.quota, q.limit_value, q.metric.as_deref()), (Some(quota), Some(300), Some(quota.metric())));
            assert!(back.message.contains("project_number:42"));
        }
        let e = GoogleError::quota_exceeded(Quota::WritePerProject, 300, 1);
        assert!(e.message.contains("limit 'Write requests per minute' of"), "{}", e.message);
    }

    #[test]
    fn range_errors_are_recognised() {
        assert!(GoogleError::new(400, "INVALID_ARGUMENT", "Unable to parse range: 'Gone'!A1").is_range_error());
        let grid = "Range ('S'!A1001) exceeds grid limits. Max rows: 1000, max columns: 26";
        assert!(GoogleError::new(400, "INVALID_ARGUMENT", grid).is_range_error());
        assert!(!GoogleError::new(400, "INVALID_ARGUMENT", grid).is_unknown_title());
        assert!(!GoogleError::new(400, "INVALID_ARGUMENT", "Invalid values[0][0]").is_range_error());
        assert!(GoogleError::parse(br#"{"error":"invalid_grant"}"#).is_none());
        assert_eq!(GoogleError::new(500, "INTERNAL", "x").reason(), None);
    }
}
