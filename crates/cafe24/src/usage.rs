//! Cafe24's two rate limits, as they show in response headers.
//!
//! 1. The request bucket (a leaky bucket per mall, 40 deep, leaking 2 calls
//!    a second by default): `X-Api-Call-Limit: used/capacity`, e.g. `1/40`.
//!    A call that would overflow it gets 429.
//! 2. The usage quota: `X-Cafe24-Call-Usage` and `X-Cafe24-Time-Usage` are the
//!    percentage used of a call-count and of a processing-time allowance;
//!    once either reaches 100 %, Cafe24 adds `X-Cafe24-Call-Remain` /
//!    `X-Cafe24-Time-Remain`, the seconds until calls are accepted again
//!    (Cafe24's example: `X-Cafe24-Call-Usage: 120.04`,
//!    `X-Cafe24-Call-Remain: 32`). Calling on while blocked pushes usage
//!    past 100 % and the wait grows.
//!
//! Header values come from the network, so every parse is lenient: a value
//! that does not parse is ignored (`None`), never a panic or an error.

use reqwest::header::HeaderMap;
use std::fmt;
use std::time::Duration;

/// `X-Api-Call-Limit`: the mall's bucket level and capacity.
pub const API_CALL_LIMIT: &str = "x-api-call-limit";
/// `X-Cafe24-Call-Usage`: % of the call-count quota used.
pub const CALL_USAGE: &str = "x-cafe24-call-usage";
/// `X-Cafe24-Time-Usage`: % of the processing-time quota used.
pub const TIME_USAGE: &str = "x-cafe24-time-usage";
/// `X-Cafe24-Call-Remain`: seconds until the call quota admits calls again.
pub const CALL_REMAIN: &str = "x-cafe24-call-remain";
/// `X-Cafe24-Time-Remain`: seconds until the time quota admits calls again.
pub const TIME_REMAIN: &str = "x-cafe24-time-remain";
/// Longest wait we believe from a header; anything beyond is treated as
/// garbage rather than parking a mall for a year.
pub const MAX_REMAIN: Duration = Duration::from_secs(24 * 3600);

/// The bucket as `X-Api-Call-Limit` reports it: `used/capacity`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CallLimit {
    pub used: u32,
    pub capacity: u32,
}

impl CallLimit {
    /// Parses `used/capacity` (spaces around the numbers allowed). A zero
    /// capacity is not a bucket and is rejected.
    pub fn parse(value: &str) -> Option<Self> {
        let (used, capacity) = value.split_once('/')?;
        let used = used.trim().parse().ok()?;
        let capacity: u32 = capacity.trim().parse().ok()?;
        (capacity > 0).then_some(Self { used, capacity })
    }

    /// Calls the bucket still takes right now.
    pub fn remaining(self) -> u32 {
        self.capacity.saturating_sub(self.used)
    }
}

impl fmt::Display for CallLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.used, self.capacity)
    }
}

/// Everything the rate-limit headers of one response said.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CallUsage {
    pub call_limit: Option<CallLimit>,
    pub call_usage_percent: Option<f64>,
    pub time_usage_percent: Option<f64>,
    pub call_remain: Option<Duration>,
    pub time_remain: Option<Duration>,
}

impl CallUsage {
    pub fn from_headers(headers: &HeaderMap) -> Self {
        let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        Self {
            call_limit: text(API_CALL_LIMIT).and_then(CallLimit::parse),
            call_usage_percent: text(CALL_USAGE).and_then(parse_percent),
            time_usage_percent: text(TIME_USAGE).and_then(parse_percent),
            call_remain: text(CALL_REMAIN).and_then(parse_seconds),
            time_remain: text(TIME_REMAIN).and_then(parse_seconds),
        }
    }

    /// How long the usage quota says to wait: the longer of the two
    /// `Remain` headers, when either is present.
    pub fn quota_wait(&self) -> Option<Duration> {
        match (self.call_remain, self.time_remain) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }

    /// Whether the usage quota is spent: a `Remain` header is present or a
    /// usage percentage reached 100.
    pub fn quota_exhausted(&self) -> bool {
        self.quota_wait().is_some()
            || [self.call_usage_percent, self.time_usage_percent].into_iter().flatten().any(|p| p >= 100.0)
    }
}

fn parse_percent(value: &str) -> Option<f64> {
    let p: f64 = value.trim().trim_end_matches('%').trim().parse().ok()?;
    (p.is_finite() && p >= 0.0).then_some(p)
}

fn parse_seconds(value: &str) -> Option<Duration> {
    let s: f64 = value.trim().parse().ok()?;
    if !s.is_finite() || s < 0.0 {
        return None;
    }
    Duration::try_from_secs_f64(s).ok().filter(|d| *d <= MAX_REMAIN)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &[u8])]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_bytes(value).unwrap());
        }
        map
    }

    #[test]
    fn reads_cafe24s_documented_example() {
        let usage = CallUsage::from_headers(&headers(&[
            ("X-Api-Call-Limit", b"1/40"),
            ("X-Cafe24-Call-Usage", b"120.04"),
            ("X-Cafe24-Call-Remain", b"32"),
            ("X-Cafe24-Time-Usage", b"100.5"),
            ("X-Cafe24-Time-Remain", b"7"),
        ]));
        assert_eq!(usage.call_limit, Some(CallLimit { used: 1, capacity: 40 }));
        assert_eq!(usage.call_usage_percent, Some(120.04));
        assert_eq!(usage.time_usage_percent, Some(100.5));
        assert_eq!(usage.quota_wait(), Some(Duration::from_secs(32)));
        assert!(usage.quota_exhausted());
    }

    #[test]
    fn bad_values_are_ignored_never_a_panic() {
        let usage = CallUsage::from_headers(&headers(&[
            ("X-Api-Call-Limit", b"40"),
            ("X-Cafe24-Call-Usage", b"NaN"),
            ("X-Cafe24-Time-Usage", b"-3"),
            ("X-Cafe24-Call-Remain", b"\xff\xfe"),
            ("X-Cafe24-Time-Remain", b"1e30"),
        ]));
        assert_eq!(usage, CallUsage::default());
        for bad in ["", "/", "a/40", "1/0", "1/-40", "99999999999/40", "1/40/3"] {
            assert_eq!(CallLimit::parse(bad), None, "{bad}");
        }
        assert_eq!(CallLimit::parse(" 3 / 40 "), Some(CallLimit { used: 3, capacity: 40 }));
        assert_eq!(CallLimit::parse("41/40").map(CallLimit::remaining), Some(0));
    }

    #[test]
    fn no_headers_means_nothing_known_and_nothing_exhausted() {
        let usage = CallUsage::from_headers(&HeaderMap::new());
        assert_eq!(usage, CallUsage::default());
        assert!(!usage.quota_exhausted());
        let mut usage = CallUsage { time_remain: Some(Duration::from_millis(2500)), ..usage };
        assert_eq!(usage.quota_wait(), Some(Duration::from_millis(2500)));
        usage.time_remain = None;
        usage.call_usage_percent = Some(100.0);
        assert!(usage.quota_exhausted());
    }
}
