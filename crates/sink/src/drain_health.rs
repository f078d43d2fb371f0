//! Whether a drain is failing, and since when: what its caller alerts on
//! after a configurable time.

use crate::error::SinkError;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Whether the drain is failing, and since when.
#[derive(Debug, Default)]
pub struct DrainHealth {
    failing: Mutex<Option<(Instant, String)>>,
}

impl DrainHealth {
    /// How long the drain has been failing, and the latest error.
    pub fn failing(&self) -> Option<(Duration, String)> {
        let failing = self.failing.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        failing.as_ref().map(|(since, error)| (since.elapsed(), error.clone()))
    }

    pub(crate) fn failed(&self, error: &SinkError) {
        let mut failing = self.failing.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let since = failing.as_ref().map_or_else(Instant::now, |(since, _)| *since);
        *failing = Some((since, error.to_string()));
    }

    pub(crate) fn recovered(&self) {
        *self.failing.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = None;
    }
}
