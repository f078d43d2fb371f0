//! A function's reserved concurrency as Lambda enforces it: an invocation
//! that would take the function past its reservation is not queued but
//! refused at once, `429 TooManyRequestsException` with the reason
//! `ReservedFunctionConcurrentInvocationLimitExceeded`
//! (<https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html>).
//! Step Functions' Lambda integration reports that refusal as the error
//! `Lambda.TooManyRequestsException`, which the state machine retries
//! (<https://docs.aws.amazon.com/step-functions/latest/dg/bp-lambda-serviceexception.html>).
//!
//! The same limit serves both local ways of running the steps: the
//! processes of [`crate::FunctionPool`] and the in-process handlers the dev
//! stack registers, so a flood meets the throttling it would meet in AWS.

use crate::function_error::{FunctionError, kinds};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// See the module docs.
#[derive(Debug)]
pub struct ReservedConcurrency {
    slots: Arc<Semaphore>,
    limit: usize,
    throttles: AtomicU64,
    invocations: AtomicU64,
}

impl ReservedConcurrency {
    /// At most `limit` invocations at once (Lambda takes 0 to mean "never
    /// invoke"; so does this).
    pub fn new(limit: usize) -> Self {
        Self {
            slots: Arc::new(Semaphore::new(limit)),
            limit,
            throttles: AtomicU64::new(0),
            invocations: AtomicU64::new(0),
        }
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Invocations refused so far.
    pub fn throttles(&self) -> u64 {
        self.throttles.load(Ordering::Relaxed)
    }

    /// Invocations let in so far.
    pub fn invocations(&self) -> u64 {
        self.invocations.load(Ordering::Relaxed)
    }

    /// A place among the running invocations of `function`, held until the
    /// permit drops, or Lambda's refusal when every place is taken.
    pub fn enter(&self, function: &str) -> Result<OwnedSemaphorePermit, FunctionError> {
        let place = self.slots.clone().try_acquire_owned().map_err(|_| {
            self.throttles.fetch_add(1, Ordering::Relaxed);
            FunctionError::new(
                kinds::TOO_MANY_REQUESTS,
                format!(
                    "Rate Exceeded. (ReservedFunctionConcurrentInvocationLimitExceeded: {function} runs {} at once)",
                    self.limit
                ),
            )
        })?;
        self.invocations.fetch_add(1, Ordering::Relaxed);
        Ok(place)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_invocation_past_the_reservation_is_refused_and_counted() {
        let reserved = ReservedConcurrency::new(2);
        let first = reserved.enter("fetch").expect("first");
        let _second = reserved.enter("fetch").expect("second");
        let refused = reserved.enter("fetch").expect_err("third refused");
        assert_eq!(refused.error_type, "Lambda.TooManyRequestsException");
        assert!(refused.error_message.contains("ReservedFunctionConcurrentInvocationLimitExceeded"));
        assert_eq!(reserved.throttles(), 1);
        drop(first);
        let _again = reserved.enter("fetch").expect("a place came free");
        assert_eq!((reserved.throttles(), reserved.invocations()), (1, 3));
    }

    #[test]
    fn a_reservation_of_zero_refuses_every_invocation() {
        let reserved = ReservedConcurrency::new(0);
        assert!(reserved.enter("fetch").is_err());
    }
}
