//! Timestamps as Step Functions writes and reads them: RFC 3339 with an
//! uppercase `T` and an uppercase `Z` or a numeric offset
//! (<https://docs.aws.amazon.com/step-functions/latest/dg/amazon-states-language-choice-state.html>).

use chrono::{DateTime, SecondsFormat, Utc};
use std::time::SystemTime;

/// Parses a timestamp; `None` when the text is not one.
pub(crate) fn parse(text: &str) -> Option<DateTime<Utc>> {
    // chrono accepts a lowercase 't'/'z' and a space separator; Step
    // Functions does not.
    let date_time_separator = text.get(10..11)?;
    if date_time_separator != "T" || text.ends_with('z') {
        return None;
    }
    DateTime::parse_from_rfc3339(text).ok().map(|t| t.with_timezone(&Utc))
}

/// `2024-05-01T12:00:00.123Z`: the form of `$$.Execution.StartTime` and of
/// history timestamps.
pub(crate) fn format(time: SystemTime) -> String {
    DateTime::<Utc>::from(time).to_rfc3339_opts(SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_rfc3339_with_uppercase_separators() {
        assert!(parse("2016-08-18T17:33:00Z").is_some());
        assert!(parse("2016-08-18T17:33:00.5+02:00").is_some());
        assert!(parse("2016-08-18t17:33:00Z").is_none());
        assert!(parse("2016-08-18T17:33:00z").is_none());
        assert!(parse("2016-08-18 17:33:00Z").is_none());
        assert!(parse("yesterday").is_none());
        assert_eq!(
            parse("2016-08-18T19:33:00+02:00"),
            parse("2016-08-18T17:33:00Z"),
            "offsets are compared as instants"
        );
    }

    #[test]
    fn formats_with_milliseconds() {
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_millis(1_500);
        assert_eq!(format(t), "1970-01-01T00:00:01.500Z");
    }
}
