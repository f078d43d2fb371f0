//! The request bucket and the usage quota, on the sandbox's own clock
//! (`std::time::Instant`); nothing here sleeps.
//!
//! Both are the same thing underneath: a [`Meter`] whose level leaks
//! linearly. The bucket admits a call when one more unit fits
//! (`level + 1 <= capacity`) and then adds it; a call that does not fit is
//! refused and adds nothing. `X-Api-Call-Limit` reports the level rounded
//! up, so a bucket holding 3.2 calls reads `4/40`.

use crate::cafe24::config::{BucketConfig, QuotaConfig};
use sluice_cafe24::CallLimit;
use std::time::{Duration, Instant};

/// Slack for float rounding when comparing levels.
const EPSILON: f64 = 1e-9;

/// A level that leaks `rate` units a second, never below zero.
#[derive(Debug, Clone)]
pub(crate) struct Meter {
    level: f64,
    rate: f64,
    at: Instant,
}

impl Meter {
    pub(crate) fn new(rate: f64, now: Instant) -> Self {
        Self { level: 0.0, rate, at: now }
    }

    pub(crate) fn level(&self, now: Instant) -> f64 {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        (self.level - elapsed * self.rate).max(0.0)
    }

    fn settle(&mut self, now: Instant) {
        self.level = self.level(now);
        self.at = self.at.max(now);
    }

    pub(crate) fn add(&mut self, amount: f64, now: Instant) -> f64 {
        self.settle(now);
        self.level += amount;
        self.level
    }

    pub(crate) fn set_rate(&mut self, rate: f64, now: Instant) {
        self.settle(now);
        self.rate = rate;
    }

    /// Time until the level is strictly below `limit`.
    pub(crate) fn time_until_below(&self, limit: f64, now: Instant) -> Duration {
        let excess = self.level(now) - limit;
        if excess < 0.0 { Duration::ZERO } else { Duration::from_secs_f64(excess / self.rate) }
    }
}

/// What the bucket did with one call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Take {
    pub(crate) admitted: bool,
    pub(crate) before: f64,
    pub(crate) after: f64,
}

/// One mall's leaky bucket.
#[derive(Debug, Clone)]
pub(crate) struct LeakyBucket {
    config: BucketConfig,
    meter: Meter,
}

impl LeakyBucket {
    pub(crate) fn new(config: BucketConfig, now: Instant) -> Self {
        Self { meter: Meter::new(config.leak_per_sec, now), config }
    }

    pub(crate) fn config(&self) -> BucketConfig {
        self.config
    }

    pub(crate) fn level(&self, now: Instant) -> f64 {
        self.meter.level(now)
    }

    pub(crate) fn try_take(&mut self, now: Instant) -> Take {
        let before = self.meter.level(now);
        if before + 1.0 <= f64::from(self.config.capacity) + EPSILON {
            let after = self.meter.add(1.0, now);
            Take { admitted: true, before, after }
        } else {
            Take { admitted: false, before, after: before }
        }
    }

    /// New capacity and leak rate; the current level carries over.
    pub(crate) fn reconfigure(&mut self, config: BucketConfig, now: Instant) {
        self.meter.set_rate(config.leak_per_sec, now);
        self.config = config;
    }

    /// `X-Api-Call-Limit` for a level.
    pub(crate) fn header(&self, level: f64) -> CallLimit {
        let used = (level - EPSILON).ceil().max(0.0);
        // Levels are bounded by capacity + 1, far inside u32.
        CallLimit { used: used as u32, capacity: self.config.capacity }
    }
}

/// The usage quota: a call meter and a processing-time meter (see
/// [`QuotaConfig`]).
#[derive(Debug, Clone)]
pub(crate) struct UsageQuota {
    config: QuotaConfig,
    calls: Meter,
    time: Meter,
}

/// The quota as the headers report it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct QuotaReading {
    pub(crate) call_percent: f64,
    pub(crate) time_percent: f64,
    /// Present only when the call quota is spent.
    pub(crate) call_remain_secs: Option<u64>,
    pub(crate) time_remain_secs: Option<u64>,
}

impl QuotaReading {
    pub(crate) fn blocked(&self) -> bool {
        self.call_remain_secs.is_some() || self.time_remain_secs.is_some()
    }
}

impl UsageQuota {
    pub(crate) fn new(config: QuotaConfig, now: Instant) -> Self {
        Self {
            calls: Meter::new(config.calls_per_window / config.window_secs, now),
            time: Meter::new(config.processing_secs_per_window / config.window_secs, now),
            config,
        }
    }

    pub(crate) fn reconfigure(&mut self, config: QuotaConfig, now: Instant) {
        self.calls.set_rate(config.calls_per_window / config.window_secs, now);
        self.time.set_rate(config.processing_secs_per_window / config.window_secs, now);
        self.config = config;
    }

    pub(crate) fn reading(&self, now: Instant) -> QuotaReading {
        let (calls, time) = (self.calls.level(now), self.time.level(now));
        let (call_limit, time_limit) = (self.config.calls_per_window, self.config.processing_secs_per_window);
        // The call quota is spent when one more call would not fit (as in
        // the bucket); the wait is until it fits again.
        let call_remain_secs = (calls + 1.0 > call_limit + EPSILON)
            .then(|| self.calls.time_until_below(call_limit - 1.0, now).as_secs_f64().ceil().max(1.0) as u64);
        // Processing time per call varies, so the time quota is spent once
        // it is reached; the wait is until it is surely under again.
        let time_remain_secs = (time + EPSILON >= time_limit)
            .then(|| self.time.time_until_below(time_limit, now).as_secs_f64().floor() as u64 + 1);
        QuotaReading {
            call_percent: calls / call_limit * 100.0,
            time_percent: time / time_limit * 100.0,
            call_remain_secs,
            time_remain_secs,
        }
    }

    /// An admitted call: one call and its processing time.
    pub(crate) fn charge(&mut self, processing: Duration, now: Instant) {
        self.calls.add(1.0, now);
        self.time.add(self.config.processing_secs_per_call + processing.as_secs_f64(), now);
    }

    /// A call refused because the quota is spent still counts as a call.
    pub(crate) fn charge_refused(&mut self, now: Instant) {
        self.calls.add(1.0, now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admits_exactly_capacity_then_refuses_without_counting() {
        let t0 = Instant::now();
        let mut bucket = LeakyBucket::new(BucketConfig::new(3, 1.0), t0);
        let takes: Vec<_> = (0..5).map(|_| bucket.try_take(t0)).collect();
        assert_eq!(takes.iter().filter(|t| t.admitted).count(), 3);
        assert_eq!(takes[3], Take { admitted: false, before: 3.0, after: 3.0 });
        assert_eq!(bucket.header(3.0), CallLimit { used: 3, capacity: 3 });
        // One second later one call's worth has leaked.
        let t1 = t0 + Duration::from_secs(1);
        assert!(bucket.try_take(t1).admitted);
        assert!(!bucket.try_take(t1).admitted);
        assert_eq!(bucket.header(bucket.level(t1 + Duration::from_millis(500))), CallLimit { used: 3, capacity: 3 });
    }

    #[test]
    fn quota_blocks_at_its_limit_and_refusals_lengthen_the_wait() {
        let t0 = Instant::now();
        let config = QuotaConfig {
            calls_per_window: 4.0,
            window_secs: 4.0,
            processing_secs_per_call: 0.0,
            ..Default::default()
        };
        let mut quota = UsageQuota::new(config, t0);
        for _ in 0..3 {
            quota.charge(Duration::ZERO, t0);
        }
        let r = quota.reading(t0);
        assert_eq!((r.call_percent, r.blocked()), (75.0, false));
        quota.charge(Duration::ZERO, t0);
        let r = quota.reading(t0);
        assert_eq!((r.call_percent, r.call_remain_secs, r.time_remain_secs), (100.0, Some(1), None));
        // Just after, a sliver has leaked, yet one more call still does not fit.
        assert!(quota.reading(t0 + Duration::from_millis(1)).blocked());
        for _ in 0..3 {
            quota.charge_refused(t0);
        }
        let r = quota.reading(t0);
        assert_eq!((r.call_percent, r.call_remain_secs), (175.0, Some(4)));
        assert!(quota.reading(t0 + Duration::from_millis(3900)).blocked());
        assert!(!quota.reading(t0 + Duration::from_secs(4)).blocked());
    }
}
