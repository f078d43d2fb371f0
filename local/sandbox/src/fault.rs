//! Fault injection shared by every sandbox: a rate of server errors, a rate
//! of timeouts (the response held past the client's deadline, the
//! connection dropped mid-body, or closed before any answer), and added
//! latency with jitter.
//!
//! Decisions come from a seeded RNG, so a run that makes the same calls in
//! the same order sees the same faults: a test can pin a seed and assert the
//! observed rates.

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How a timeout fault shows itself to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeoutMode {
    /// Hold the response this long (longer than the client's timeout), then
    /// answer 504.
    Hold(#[serde(with = "millis")] Duration),
    /// Send the status and headers, then break the connection inside the
    /// body.
    Drop,
    /// Close the connection without sending anything: the client sees it
    /// end before any answer (an upstream process that died, a proxy that
    /// gave up).
    Close,
}

/// What to inject. The default injects nothing.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FaultConfig {
    /// Share of calls answered 500, in [0, 1].
    pub server_error_rate: f64,
    /// Share of calls that time out, in [0, 1]; with `server_error_rate` at
    /// most 1.
    pub timeout_rate: f64,
    pub timeout_mode: TimeoutMode,
    /// Added to every answered call.
    #[serde(with = "millis")]
    pub latency: Duration,
    /// A uniformly random extra in [0, jitter] on top of `latency`.
    #[serde(with = "millis")]
    pub latency_jitter: Duration,
    pub seed: u64,
}

impl Default for FaultConfig {
    fn default() -> Self {
        Self {
            server_error_rate: 0.0,
            timeout_rate: 0.0,
            timeout_mode: TimeoutMode::Hold(Duration::from_secs(30)),
            latency: Duration::ZERO,
            latency_jitter: Duration::ZERO,
            seed: 1,
        }
    }
}

impl FaultConfig {
    /// Names the first setting that is out of range.
    pub fn validate(&self) -> Result<(), String> {
        for (name, rate) in [("server_error_rate", self.server_error_rate), ("timeout_rate", self.timeout_rate)] {
            if !(0.0..=1.0).contains(&rate) {
                return Err(format!("{name} must be between 0 and 1, got {rate}"));
            }
        }
        if self.server_error_rate + self.timeout_rate > 1.0 {
            return Err("server_error_rate + timeout_rate must not exceed 1".into());
        }
        Ok(())
    }
}

/// The fault a call gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fault {
    ServerError,
    Timeout(TimeoutMode),
}

/// What happens to one call: maybe a fault, and how long to delay it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultDecision {
    pub fault: Option<Fault>,
    pub latency: Duration,
}

/// A fault plan with its seeded RNG.
#[derive(Debug)]
pub struct FaultInjector {
    config: FaultConfig,
    rng: StdRng,
}

impl FaultInjector {
    pub fn new(config: FaultConfig) -> Result<Self, String> {
        config.validate()?;
        Ok(Self { rng: StdRng::seed_from_u64(config.seed), config })
    }

    pub fn config(&self) -> &FaultConfig {
        &self.config
    }

    /// Replaces the plan and restarts the RNG from the new seed.
    pub fn set(&mut self, config: FaultConfig) -> Result<(), String> {
        *self = Self::new(config)?;
        Ok(())
    }

    /// Draws the fate of the next call. Exactly two draws per call, so the
    /// sequence does not depend on which faults are switched on.
    pub fn decide(&mut self) -> FaultDecision {
        let roll: f64 = self.rng.random();
        let jitter_share: f64 = self.rng.random();
        let c = &self.config;
        let fault = if roll < c.server_error_rate {
            Some(Fault::ServerError)
        } else if roll < c.server_error_rate + c.timeout_rate {
            Some(Fault::Timeout(c.timeout_mode))
        } else {
            None
        };
        FaultDecision { fault, latency: c.latency + c.latency_jitter.mul_f64(jitter_share) }
    }
}

/// Durations as whole milliseconds in JSON, for every sandbox's fault settings.
pub(crate) mod millis {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub(crate) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_checked() {
        assert!(FaultConfig { server_error_rate: 1.5, ..Default::default() }.validate().is_err());
        assert!(FaultConfig { timeout_rate: -0.1, ..Default::default() }.validate().is_err());
        let both = FaultConfig { server_error_rate: 0.6, timeout_rate: 0.6, ..Default::default() };
        assert!(FaultInjector::new(both).is_err());
    }

    #[test]
    fn same_seed_same_faults_and_rates_hold() {
        let config = FaultConfig { server_error_rate: 0.1, timeout_rate: 0.05, seed: 7, ..Default::default() };
        let run = || {
            let mut f = FaultInjector::new(config).unwrap();
            (0..10_000).map(|_| f.decide().fault).collect::<Vec<_>>()
        };
        let (a, b) = (run(), run());
        assert_eq!(a, b);
        let errors = a.iter().filter(|f| **f == Some(Fault::ServerError)).count();
        let timeouts = a.iter().filter(|f| matches!(f, Some(Fault::Timeout(_)))).count();
        assert!((900..=1100).contains(&errors), "{errors}");
        assert!((400..=600).contains(&timeouts), "{timeouts}");
    }

    #[test]
    fn latency_stays_within_its_jitter() {
        let config = FaultConfig {
            latency: Duration::from_millis(10),
            latency_jitter: Duration::from_millis(5),
            ..Default::default()
        };
        let mut f = FaultInjector::new(config).unwrap();
        for _ in 0..1000 {
            let d = f.decide();
            assert_eq!(d.fault, None);
            assert!(d.latency >= Duration::from_millis(10) && d.latency <= Duration::from_millis(15));
        }
    }

    #[test]
    fn reads_json_with_defaults() {
        let c: FaultConfig = serde_json::from_str(r#"{"server_error_rate":0.2,"timeout_mode":"drop"}"#).unwrap();
        assert_eq!((c.server_error_rate, c.timeout_mode, c.seed), (0.2, TimeoutMode::Drop, 1));
        let c: FaultConfig = serde_json::from_str(r#"{"timeout_mode":"close"}"#).unwrap();
        assert_eq!(c.timeout_mode, TimeoutMode::Close);
        let c: FaultConfig = serde_json::from_str(r#"{"timeout_mode":{"hold":1500},"latency":20}"#).unwrap();
        assert_eq!(c.timeout_mode, TimeoutMode::Hold(Duration::from_millis(1500)));
        assert_eq!(c.latency, Duration::from_millis(20));
    }
}
