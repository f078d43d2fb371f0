//! The sandbox's state, shared by the HTTP handlers and the library handle.
//!
//! One mutex guards it all; every critical section is short and never
//! awaits (latency, holds and webhook posts happen after the lock is
//! released).

use crate::cafe24::SandboxError;
use crate::cafe24::bucket::{LeakyBucket, UsageQuota};
use crate::cafe24::config::{BucketConfig, QuotaConfig, SandboxConfig, WebhookTarget};
use crate::cafe24::oauth::{TokenBook, TokenPolicy};
use crate::cafe24::record::CallLog;
use crate::cafe24::store::ResourceStore;
use crate::fault::FaultInjector;
use chrono::{DateTime, FixedOffset, Utc};
use rand::SeedableRng;
use rand::rngs::StdRng;
use sluice_cafe24::Secret;
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

/// One mall: its limits, tokens and resources.
#[derive(Debug)]
pub(crate) struct Mall {
    pub(crate) bucket: LeakyBucket,
    pub(crate) quota: UsageQuota,
    pub(crate) tokens: TokenBook,
    pub(crate) store: ResourceStore,
    /// A 429 storm: until then every authorised Admin API call of the mall
    /// is answered 429 with this `Retry-After` (seconds).
    pub(crate) storm: Option<(Instant, u64)>,
    /// Every Admin API call answered 403 (a scope withdrawn, the app
    /// suspended) until tokens are issued again, as a shop re-consenting.
    pub(crate) forbidden: bool,
}

impl Mall {
    fn new(bucket: BucketConfig, quota: QuotaConfig, now: Instant) -> Self {
        Self {
            bucket: LeakyBucket::new(bucket, now),
            quota: UsageQuota::new(quota, now),
            tokens: TokenBook::default(),
            store: ResourceStore::default(),
            storm: None,
            forbidden: false,
        }
    }
}

/// Everything that changes.
#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) malls: BTreeMap<String, Mall>,
    pub(crate) quota: QuotaConfig,
    pub(crate) faults: FaultInjector,
    pub(crate) faults_on_token_endpoint: bool,
    pub(crate) log: CallLog,
    pub(crate) webhook: Option<WebhookTarget>,
    /// Token generation has its own RNG so issuing tokens does not shift
    /// the fault sequence.
    pub(crate) token_rng: StdRng,
}

impl Inner {
    pub(crate) fn mall_mut(&mut self, mall_id: &str) -> Result<&mut Mall, SandboxError> {
        self.malls.get_mut(mall_id).ok_or_else(|| SandboxError::UnknownMall(mall_id.to_owned()))
    }

    pub(crate) fn mall(&self, mall_id: &str) -> Result<&Mall, SandboxError> {
        self.malls.get(mall_id).ok_or_else(|| SandboxError::UnknownMall(mall_id.to_owned()))
    }

    pub(crate) fn add_mall(&mut self, mall_id: &str, bucket: BucketConfig, now: Instant) -> Result<(), SandboxError> {
        sluice_cafe24::check_mall_id(mall_id).map_err(|e| SandboxError::InvalidInput(e.to_string()))?;
        bucket.validate().map_err(SandboxError::InvalidInput)?;
        if self.malls.contains_key(mall_id) {
            return Err(SandboxError::MallExists(mall_id.to_owned()));
        }
        self.malls.insert(mall_id.to_owned(), Mall::new(bucket, self.quota, now));
        Ok(())
    }
}

/// State plus what never changes after start.
#[derive(Debug)]
pub(crate) struct Shared {
    /// The sandbox's clock starts here; records report time since it.
    pub(crate) epoch: Instant,
    pub(crate) tokens: TokenPolicy,
    pub(crate) client_id: String,
    pub(crate) client_secret: Secret,
    /// For webhook deliveries.
    pub(crate) http: reqwest::Client,
    inner: Mutex<Inner>,
}

impl Shared {
    pub(crate) fn new(config: &SandboxConfig) -> Result<Self, SandboxError> {
        config.validate().map_err(SandboxError::InvalidInput)?;
        let epoch = Instant::now();
        let faults = FaultInjector::new(config.faults).map_err(SandboxError::InvalidInput)?;
        let mut inner = Inner {
            malls: BTreeMap::new(),
            quota: config.quota,
            faults,
            faults_on_token_endpoint: config.faults_on_token_endpoint,
            log: CallLog::new(config.record_limit),
            webhook: config.webhook.clone(),
            token_rng: StdRng::seed_from_u64(config.faults.seed ^ 0x7465_6b6f_6e73),
        };
        for mall in &config.malls {
            inner.add_mall(mall, config.bucket, epoch)?;
        }
        let http = sluice_http::builder()
            .timeout(config.webhook_timeout)
            .build()
            .map_err(|e| SandboxError::Io(format!("cannot build the webhook client: {e}")))?;
        Ok(Self {
            epoch,
            tokens: TokenPolicy::from_config(config),
            client_id: config.client_id.clone(),
            client_secret: config.client_secret.clone(),
            http,
            inner: Mutex::new(inner),
        })
    }

    /// The state. A panic while it was held cannot leave it torn (every
    /// section is a few field updates), so a poisoned lock is taken over.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// `now` on the sandbox's clock.
    pub(crate) fn since_epoch(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.epoch)
    }
}

/// Wall-clock now, for the dates the API shows.
pub(crate) fn wall_now() -> DateTime<FixedOffset> {
    DateTime::<Utc>::from(SystemTime::now()).fixed_offset()
}
