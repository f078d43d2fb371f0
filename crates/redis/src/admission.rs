//! The answer of a limiter or bucket.

use crate::deny_cache::DenyCache;
use crate::error::Error;
use std::time::Duration;

/// Whether a call may go ahead now, and if not, exactly how long to wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Admitted and recorded, at Redis's clock.
    Admitted { server_time_us: u64 },
    /// Denied; nothing was recorded. Asking again after `wait` will be
    /// admitted unless other callers take the room first.
    /// `server_time_us` is `None` when the in-process deny cache answered.
    Denied { wait: Duration, server_time_us: Option<u64> },
}

impl Admission {
    pub fn is_admitted(&self) -> bool {
        matches!(self, Self::Admitted { .. })
    }

    /// Zero when admitted.
    pub fn wait(&self) -> Duration {
        match self {
            Self::Admitted { .. } => Duration::ZERO,
            Self::Denied { wait, .. } => *wait,
        }
    }

    /// Redis's clock when it decided, if Redis decided.
    pub fn server_time_us(&self) -> Option<u64> {
        match self {
            Self::Admitted { server_time_us } => Some(*server_time_us),
            Self::Denied { server_time_us, .. } => *server_time_us,
        }
    }
}

/// Reads a limiter or bucket script's `{admitted, now_us, wait_us}` reply,
/// and remembers a denial in the deny cache under `cache_key`.
pub(crate) fn from_reply(
    script: &'static str,
    (admitted, now, wait): (i64, i64, i64),
    deny: &DenyCache,
    cache_key: &str,
    cost: u32,
) -> Result<Admission, Error> {
    let now = unsigned(script, now)?;
    if admitted == 1 {
        return Ok(Admission::Admitted { server_time_us: now });
    }
    let wait = Duration::from_micros(unsigned(script, wait)?);
    deny.block(cache_key, cost, wait);
    Ok(Admission::Denied { wait, server_time_us: Some(now) })
}

pub(crate) fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// Reads a script's integer reply as unsigned, refusing negative values.
pub(crate) fn unsigned(script: &'static str, v: i64) -> Result<u64, Error> {
    u64::try_from(v).map_err(|_| Error::UnexpectedReply { script, reply: v.to_string() })
}
