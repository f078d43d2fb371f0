//! How a Sheets sandbox is set up: where it listens, the four request
//! quotas and their window, access token lifetime, the project number the
//! 429s name, and the probabilistic faults.

use crate::fault::FaultConfig;
use std::net::SocketAddr;
use std::time::Duration;

/// Everything a Sheets sandbox starts with. Clients, users and
/// spreadsheets are added on the running sandbox.
#[derive(Debug, Clone, PartialEq)]
pub struct SheetsSandboxConfig {
    /// Where to listen; port 0 picks a free one.
    pub addr: SocketAddr,
    /// Accepted write requests per user per project in any window (Google: 60).
    pub write_per_user: u32,
    /// Accepted write requests per project in any window (Google: 300).
    pub write_per_project: u32,
    /// Accepted read requests per user per project in any window (Google: 60).
    pub read_per_user: u32,
    /// Accepted read requests per project in any window (Google: 300).
    pub read_per_project: u32,
    /// The sliding window the quotas hold over (Google: a minute). Tests
    /// use a second or two.
    pub quota_window: Duration,
    /// Lifetime of an access token (Google: an hour).
    pub access_token_ttl: Duration,
    /// The Cloud project number the 429 body names as its consumer.
    pub project_number: u64,
    /// Probabilistic faults for the Sheets API calls (not the token
    /// endpoint); none by default.
    pub faults: FaultConfig,
}

impl Default for SheetsSandboxConfig {
    fn default() -> Self {
        Self {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            write_per_user: 60,
            write_per_project: 300,
            read_per_user: 60,
            read_per_project: 300,
            quota_window: Duration::from_secs(60),
            access_token_ttl: Duration::from_secs(3600),
            project_number: 123_456_789_012,
            faults: FaultConfig::default(),
        }
    }
}

impl SheetsSandboxConfig {
    /// Names the first setting that is out of range.
    pub fn validate(&self) -> Result<(), String> {
        let limits = [
            ("write_per_user", self.write_per_user),
            ("write_per_project", self.write_per_project),
            ("read_per_user", self.read_per_user),
            ("read_per_project", self.read_per_project),
        ];
        for (name, limit) in limits {
            if limit == 0 {
                return Err(format!("{name} must be at least 1"));
            }
        }
        for (name, duration) in [("quota_window", self.quota_window), ("access_token_ttl", self.access_token_ttl)] {
            if duration.is_zero() {
                return Err(format!("{name} must be positive"));
            }
        }
        self.faults.validate()
    }
}
