//! How a Cafe24 sandbox is set up: its malls and their buckets, the usage
//! quota, the OAuth app, token lifetimes, faults and the webhook target.

use crate::fault::FaultConfig;
use serde::{Deserialize, Serialize};
use sluice_cafe24::Secret;
use std::net::SocketAddr;
use std::time::Duration;

/// One mall's request bucket: `capacity` calls deep, leaking
/// `leak_per_sec` calls a second. Cafe24's default is 40 at 2/s; larger
/// plans get deeper, faster buckets (1000 at 5/s, say).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BucketConfig {
    pub capacity: u32,
    /// Read as `drain_per_sec` too, its name before "leak".
    #[serde(alias = "drain_per_sec")]
    pub leak_per_sec: f64,
}

impl Default for BucketConfig {
    fn default() -> Self {
        Self { capacity: 40, leak_per_sec: 2.0 }
    }
}

impl BucketConfig {
    pub fn new(capacity: u32, leak_per_sec: f64) -> Self {
        Self { capacity, leak_per_sec }
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.capacity == 0 {
            return Err("bucket capacity must be at least 1".into());
        }
        if !(self.leak_per_sec.is_finite() && self.leak_per_sec > 0.0) {
            return Err(format!(
                "bucket leak rate must be a positive number of calls per second, got {}",
                self.leak_per_sec
            ));
        }
        Ok(())
    }
}

/// The usage quota behind `X-Cafe24-Call-Usage` / `X-Cafe24-Time-Usage`.
///
/// Cafe24 documents the headers, not the model. A public write-up of
/// Cafe24's quota guide gives the defaults "3,000 calls and 600 s of
/// processing time per 10 minutes"; and Cafe24 says calling on while
/// blocked pushes usage past 100 % and lengthens the wait. So each quota is
/// modelled as a meter that leaks its limit evenly over the window: usage %
/// is the meter over the limit; a call is refused while one more call would
/// not fit the call quota or the time quota is reached (refused calls still
/// add to the call meter, so usage climbs past 100 %); `Remain` is the whole
/// seconds until a call is admitted again, sent only while calls are
/// refused.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct QuotaConfig {
    pub calls_per_window: f64,
    pub processing_secs_per_window: f64,
    pub window_secs: f64,
    /// Processing time charged per admitted call, on top of any injected
    /// latency.
    pub processing_secs_per_call: f64,
}

impl Default for QuotaConfig {
    fn default() -> Self {
        Self {
            calls_per_window: 3000.0,
            processing_secs_per_window: 600.0,
            window_secs: 600.0,
            processing_secs_per_call: 0.01,
        }
    }
}

impl QuotaConfig {
    pub fn validate(&self) -> Result<(), String> {
        let positive = [
            ("calls_per_window", self.calls_per_window),
            ("processing_secs_per_window", self.processing_secs_per_window),
            ("window_secs", self.window_secs),
        ];
        for (name, v) in positive {
            if !(v.is_finite() && v > 0.0) {
                return Err(format!("quota {name} must be positive, got {v}"));
            }
        }
        if !(self.processing_secs_per_call.is_finite() && self.processing_secs_per_call >= 0.0) {
            return Err("quota processing_secs_per_call must not be negative".into());
        }
        Ok(())
    }
}

/// Where webhooks go, and the key the receiver checks (`X-API-Key`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookTarget {
    pub url: String,
    pub api_key: Secret,
}

/// Everything a sandbox starts with. `Debug` is safe: secrets are redacted.
#[derive(Debug, Clone)]
pub struct SandboxConfig {
    /// Where to listen; port 0 picks a free one.
    pub listen: SocketAddr,
    /// Malls that exist from the start, each with `bucket`.
    pub malls: Vec<String>,
    pub bucket: BucketConfig,
    pub quota: QuotaConfig,
    /// The OAuth app whose credentials the token endpoint accepts.
    pub client_id: String,
    pub client_secret: Secret,
    /// Cafe24: two hours.
    pub access_token_lifetime: Duration,
    /// Cafe24: two weeks.
    pub refresh_token_lifetime: Duration,
    /// Faults for the Admin API. `faults_on_token_endpoint` extends them to
    /// `/api/v2/oauth/token` (off by default, so token tests stay exact).
    pub faults: FaultConfig,
    pub faults_on_token_endpoint: bool,
    pub webhook: Option<WebhookTarget>,
    pub webhook_timeout: Duration,
    /// Most call records kept; older ones are dropped (and counted).
    pub record_limit: usize,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            malls: Vec::new(),
            bucket: BucketConfig::default(),
            quota: QuotaConfig::default(),
            client_id: "sandbox-client".into(),
            client_secret: Secret::new("sandbox-secret"),
            access_token_lifetime: Duration::from_secs(2 * 3600),
            refresh_token_lifetime: Duration::from_secs(14 * 24 * 3600),
            faults: FaultConfig::default(),
            faults_on_token_endpoint: false,
            webhook: None,
            webhook_timeout: Duration::from_secs(10),
            record_limit: 1_000_000,
        }
    }
}

impl SandboxConfig {
    /// A sandbox on a free port with these malls and defaults otherwise.
    pub fn with_malls<I: IntoIterator<Item = S>, S: Into<String>>(malls: I) -> Self {
        Self { malls: malls.into_iter().map(Into::into).collect(), ..Self::default() }
    }

    pub fn validate(&self) -> Result<(), String> {
        self.bucket.validate()?;
        self.quota.validate()?;
        self.faults.validate()?;
        for mall in &self.malls {
            sluice_cafe24::check_mall_id(mall).map_err(|e| e.to_string())?;
        }
        if self.access_token_lifetime.is_zero() || self.refresh_token_lifetime.is_zero() {
            return Err("token lifetimes must be positive".into());
        }
        if self.record_limit == 0 {
            return Err("record_limit must be at least 1".into());
        }
        Ok(())
    }
}
