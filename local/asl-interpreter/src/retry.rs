//! `Retry`: retriers, scanned in order; the first whose `ErrorEquals`
//! matches decides. Its n-th retry (n from 0) waits IntervalSeconds ×
//! BackoffRate^n, capped at MaxDelaySeconds; with `JitterStrategy: FULL`
//! the wait is a random time between 0 and that ("a random number between
//! 0 and the computed backoff",
//! <https://docs.aws.amazon.com/cdk/api/v2/python/aws_cdk.aws_stepfunctions/JitterType.html>).
//! A retrier's count spans one visit of the state, whichever of its errors
//! occurred (<https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html>).

use crate::definition::reader::Fields;
use crate::error_name;
use rand::RngExt;
use rand::rngs::StdRng;
use std::time::Duration;

/// Step Functions' largest IntervalSeconds and MaxAttempts.
const MAX_SECONDS_OR_ATTEMPTS: u64 = 99_999_999;
/// Step Functions' largest MaxDelaySeconds.
const MAX_DELAY_SECONDS: u64 = 31_622_400;

#[derive(Debug, Clone)]
pub(crate) struct Retrier {
    pub(crate) error_equals: Vec<String>,
    interval_seconds: f64,
    max_attempts: u32,
    backoff_rate: f64,
    max_delay_seconds: Option<f64>,
    full_jitter: bool,
}

const RETRIER_FIELDS: &[&str] =
    &["ErrorEquals", "IntervalSeconds", "MaxAttempts", "BackoffRate", "MaxDelaySeconds", "JitterStrategy", "Comment"];

impl Retrier {
    pub(crate) fn parse(fields: &Fields<'_>, is_last: bool) -> Option<Self> {
        fields.check_known(RETRIER_FIELDS, "a retrier");
        let error_equals = parse_error_equals(fields, is_last);
        let interval = fields.unsigned("IntervalSeconds", MAX_SECONDS_OR_ATTEMPTS).unwrap_or(1);
        if interval == 0 {
            fields.problem("IntervalSeconds", "must be a positive integer");
        }
        let max_attempts = fields.unsigned("MaxAttempts", MAX_SECONDS_OR_ATTEMPTS).unwrap_or(3);
        let backoff_rate = fields.number("BackoffRate").unwrap_or(2.0);
        if backoff_rate < 1.0 {
            fields.problem("BackoffRate", "must be at least 1.0");
        }
        let max_delay = fields.unsigned("MaxDelaySeconds", MAX_DELAY_SECONDS);
        if max_delay == Some(0) {
            fields.problem("MaxDelaySeconds", "must be a positive integer");
        }
        let full_jitter = match fields.string("JitterStrategy") {
            None | Some("NONE") => false,
            Some("FULL") => true,
            Some(other) => {
                fields.problem("JitterStrategy", format!("{other:?} is not FULL or NONE"));
                false
            }
        };
        Some(Self {
            error_equals: error_equals?,
            interval_seconds: interval as f64,
            max_attempts: u32::try_from(max_attempts).unwrap_or(u32::MAX),
            backoff_rate,
            max_delay_seconds: max_delay.map(|s| s as f64),
            full_jitter,
        })
    }

    /// The wait before retry number `attempt` (0 for the first retry).
    pub(crate) fn delay(&self, attempt: u32, rng: &mut StdRng) -> Duration {
        let exponent = i32::try_from(attempt).unwrap_or(i32::MAX);
        let mut seconds = self.interval_seconds * self.backoff_rate.powi(exponent);
        if let Some(max) = self.max_delay_seconds {
            seconds = seconds.min(max);
        }
        if self.full_jitter {
            seconds = rng.random_range(0.0..=seconds);
        }
        Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX)
    }
}

/// `ErrorEquals` of a retrier or catcher, with AWS's placement rules.
pub(crate) fn parse_error_equals(fields: &Fields<'_>, is_last: bool) -> Option<Vec<String>> {
    let names: Option<Vec<String>> =
        fields.required("ErrorEquals", Fields::array)?.iter().map(|v| v.as_str().map(str::to_owned)).collect();
    let Some(names) = names else {
        fields.problem("ErrorEquals", "must be an array of strings");
        return None;
    };
    error_name::check_error_equals(&names, is_last).map_err(|e| fields.problem("ErrorEquals", e)).ok()?;
    Some(names)
}

/// How many times each retrier of one state visit has retried.
#[derive(Debug)]
pub(crate) struct RetryCounts(Vec<u32>);

impl RetryCounts {
    pub(crate) fn new(retriers: &[Retrier]) -> Self {
        Self(vec![0; retriers.len()])
    }

    /// The wait before the next attempt, or `None` when no retrier matches
    /// or the matching one has used up its attempts.
    pub(crate) fn next_delay(&mut self, retriers: &[Retrier], error: &str, rng: &mut StdRng) -> Option<Duration> {
        let index = retriers.iter().position(|r| error_name::any_matches(&r.error_equals, error))?;
        let retrier = &retriers[index];
        let attempt = self.0[index];
        if attempt >= retrier.max_attempts {
            return None;
        }
        self.0[index] += 1;
        Some(retrier.delay(attempt, rng))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn retrier(interval: f64, rate: f64, max_delay: Option<f64>, attempts: u32, full_jitter: bool) -> Retrier {
        Retrier {
            error_equals: vec!["States.ALL".into()],
            interval_seconds: interval,
            max_attempts: attempts,
            backoff_rate: rate,
            max_delay_seconds: max_delay,
            full_jitter,
        }
    }

    #[test]
    fn backoff_grows_and_is_capped() {
        let mut rng = StdRng::seed_from_u64(1);
        let r = retrier(3.0, 1.5, None, 2, false);
        assert_eq!(r.delay(0, &mut rng), Duration::from_secs(3));
        assert_eq!(r.delay(1, &mut rng), Duration::from_millis(4_500));
        let capped = retrier(2.0, 2.0, Some(5.0), 5, false);
        let delays: Vec<_> = (0..4).map(|n| capped.delay(n, &mut rng).as_secs_f64()).collect();
        assert_eq!(delays, vec![2.0, 4.0, 5.0, 5.0]);
    }

    #[test]
    fn full_jitter_stays_within_the_computed_backoff() {
        let mut rng = StdRng::seed_from_u64(7);
        let r = retrier(10.0, 2.0, None, 3, true);
        let delays: Vec<f64> = (0..200).map(|_| r.delay(2, &mut rng).as_secs_f64()).collect();
        assert!(delays.iter().all(|d| (0.0..=40.0).contains(d)), "{delays:?}");
        assert!(delays.iter().any(|d| *d < 20.0) && delays.iter().any(|d| *d > 20.0), "not spread: {delays:?}");
    }

    #[test]
    fn counts_are_per_retrier_and_max_attempts_zero_never_retries() {
        let mut rng = StdRng::seed_from_u64(1);
        let mut timeout = retrier(1.0, 2.0, None, 0, false);
        timeout.error_equals = vec!["States.Timeout".into()];
        let retriers = vec![timeout, retrier(1.0, 2.0, None, 2, false)];
        let mut counts = RetryCounts::new(&retriers);
        assert_eq!(counts.next_delay(&retriers, "States.Timeout", &mut rng), None);
        assert_eq!(counts.next_delay(&retriers, "Boom", &mut rng), Some(Duration::from_secs(1)));
        assert_eq!(counts.next_delay(&retriers, "Other", &mut rng), Some(Duration::from_secs(2)));
        assert_eq!(counts.next_delay(&retriers, "Boom", &mut rng), None);
    }
}
