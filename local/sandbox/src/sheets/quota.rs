//! The Sheets API's request quotas, enforced exactly over a sliding window.
//!
//! Google documents four per-minute quotas: read requests and write
//! requests, each per project (300) and per user per project (60), and says
//! they refill every minute. The sandbox enforces the strictest reading of
//! that: it keeps the time of every accepted request and admits a request
//! only while fewer than `limit` accepted ones lie in the last `window`
//! (a request at `t` counts until `t + window`), so no interval of length
//! `window` ever holds more than `limit` accepted requests. A refused
//! request is not counted, so a caller that keeps knocking is not locked
//! out for longer.
//!
//! A project is an OAuth client; a user is the user the access token was
//! issued for.

use crate::sheets::config::SheetsSandboxConfig;
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

/// Which of the two request kinds a call is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum RequestKind {
    Read,
    Write,
}

/// One of the four quotas; a 429 names the one that was spent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Quota {
    WritePerUser,
    WritePerProject,
    ReadPerUser,
    ReadPerProject,
}

impl Quota {
    /// `quota_limit` in the 429's `ErrorInfo` metadata.
    pub(crate) fn limit_name(self) -> &'static str {
        match self {
            Self::WritePerUser => "WriteRequestsPerMinutePerUser",
            Self::WritePerProject => "WriteRequestsPerMinutePerProject",
            Self::ReadPerUser => "ReadRequestsPerMinutePerUser",
            Self::ReadPerProject => "ReadRequestsPerMinutePerProject",
        }
    }

    /// `quota_metric` in the metadata.
    pub(crate) fn metric(self) -> &'static str {
        match self {
            Self::WritePerUser | Self::WritePerProject => "sheets.googleapis.com/write_requests",
            Self::ReadPerUser | Self::ReadPerProject => "sheets.googleapis.com/read_requests",
        }
    }

    /// The names the 429's message uses: the metric's and the limit's.
    pub(crate) fn titles(self) -> (&'static str, &'static str) {
        match self {
            Self::WritePerUser => ("Write requests", "Write requests per minute per user"),
            Self::WritePerProject => ("Write requests", "Write requests per minute"),
            Self::ReadPerUser => ("Read requests", "Read requests per minute per user"),
            Self::ReadPerProject => ("Read requests", "Read requests per minute"),
        }
    }
}

impl SheetsSandboxConfig {
    fn limit(&self, quota: Quota) -> u32 {
        match quota {
            Quota::WritePerUser => self.write_per_user,
            Quota::WritePerProject => self.write_per_project,
            Quota::ReadPerUser => self.read_per_user,
            Quota::ReadPerProject => self.read_per_project,
        }
    }
}

/// A refusal: the quota spent and its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Exceeded {
    pub(crate) quota: Quota,
    pub(crate) limit: u32,
}

/// The accepted requests still inside the window, oldest first.
#[derive(Debug, Default)]
struct Window {
    accepted: VecDeque<Instant>,
}

impl Window {
    /// Forgets requests that have left the window; returns how many remain.
    fn count(&mut self, window: Duration, now: Instant) -> usize {
        while self.accepted.front().is_some_and(|t| now.saturating_duration_since(*t) >= window) {
            self.accepted.pop_front();
        }
        self.accepted.len()
    }
}

/// Every user's and every project's windows.
#[derive(Debug)]
pub(crate) struct QuotaBook {
    /// The four limits and the window they apply over.
    limits: SheetsSandboxConfig,
    /// Keyed by (client id, user) for per-user quotas, (client id, "") for
    /// per-project ones.
    windows: HashMap<(Quota, String, String), Window>,
}

impl QuotaBook {
    pub(crate) fn new(limits: SheetsSandboxConfig) -> Self {
        Self { limits, windows: HashMap::new() }
    }

    /// The per-user quota for `kind`, as an injected 429 names it.
    pub(crate) fn per_user(&self, kind: RequestKind) -> Exceeded {
        let quota = match kind {
            RequestKind::Write => Quota::WritePerUser,
            RequestKind::Read => Quota::ReadPerUser,
        };
        Exceeded { quota, limit: self.limits.limit(quota) }
    }

    /// Admits and counts one request of `kind` by `user` of `client_id`, or
    /// names the quota that refuses it (then nothing is counted). The
    /// per-user quota is checked first.
    pub(crate) fn admit(
        &mut self,
        kind: RequestKind,
        client_id: &str,
        user: &str,
        now: Instant,
    ) -> Result<(), Exceeded> {
        let (per_user, per_project) = match kind {
            RequestKind::Write => (Quota::WritePerUser, Quota::WritePerProject),
            RequestKind::Read => (Quota::ReadPerUser, Quota::ReadPerProject),
        };
        let keys =
            [(per_user, client_id.to_owned(), user.to_owned()), (per_project, client_id.to_owned(), String::new())];
        for key in &keys {
            let limit = self.limits.limit(key.0);
            let window = self.windows.entry(key.clone()).or_default();
            if window.count(self.limits.quota_window, now) >= limit as usize {
                return Err(Exceeded { quota: key.0, limit });
            }
        }
        for key in keys {
            self.windows.entry(key).or_default().accepted.push_back(now);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> SheetsSandboxConfig {
        SheetsSandboxConfig {
            write_per_user: 3,
            write_per_project: 5,
            read_per_user: 1,
            read_per_project: 10,
            quota_window: Duration::from_secs(2),
            ..Default::default()
        }
    }

    #[test]
    fn admits_the_limit_per_window_and_no_more() {
        let (mut book, t0) = (QuotaBook::new(limits()), Instant::now());
        let ms = |n: u64| t0 + Duration::from_millis(n);
        for i in 0..3 {
            assert_eq!(book.admit(RequestKind::Write, "p", "ann", ms(i * 100)), Ok(()));
        }
        let refused = book.admit(RequestKind::Write, "p", "ann", ms(300));
        assert_eq!(refused, Err(Exceeded { quota: Quota::WritePerUser, limit: 3 }));
        // Refusals are not counted: the first slot frees exactly at t0 + 2 s.
        assert!(book.admit(RequestKind::Write, "p", "ann", ms(1999)).is_err());
        assert_eq!(book.admit(RequestKind::Write, "p", "ann", ms(2000)), Ok(()));
        assert!(book.admit(RequestKind::Write, "p", "ann", ms(2050)).is_err());
        // Reads have their own windows.
        assert_eq!(book.admit(RequestKind::Read, "p", "ann", ms(2050)), Ok(()));
    }

    #[test]
    fn the_project_quota_spans_its_users() {
        let (mut book, t0) = (QuotaBook::new(limits()), Instant::now());
        for user in ["a", "a", "b", "b", "c"] {
            assert_eq!(book.admit(RequestKind::Write, "p", user, t0), Ok(()));
        }
        let refused = book.admit(RequestKind::Write, "p", "d", t0);
        assert_eq!(refused, Err(Exceeded { quota: Quota::WritePerProject, limit: 5 }));
        // Another project is another budget.
        assert_eq!(book.admit(RequestKind::Write, "q", "d", t0), Ok(()));
    }
}
