//! One function's execution environments, scaled as Lambda scales them:
//! an invocation takes an idle environment, or starts one (a cold start)
//! while fewer than the function's concurrency are running; each serves
//! one invocation at a time and is kept for the next. Past the limit an
//! invocation waits for an environment to come free: that limit is about
//! this machine. A function's reserved concurrency, when the pool enforces
//! it, is Lambda's limit instead: an invocation past it is refused with
//! `TooManyRequestsException` ([`ReservedConcurrency`]), which the state
//! machine retries.

use crate::environment::{Environment, Launch};
use crate::function_error::{FunctionError, kinds};
use crate::function_spec::FunctionSpec;
use crate::reserved_concurrency::ReservedConcurrency;
use axum::body::Bytes;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use tokio::sync::Semaphore;

/// See the module docs.
#[derive(Debug)]
pub struct FunctionPool {
    spec: FunctionSpec,
    launch: Launch,
    slots: Semaphore,
    concurrency: usize,
    reserved: Option<ReservedConcurrency>,
    idle: Mutex<Vec<Environment>>,
    cold_starts: AtomicU64,
    invocations: AtomicU64,
}

impl FunctionPool {
    /// Environments of `spec` started as `launch` says; at most
    /// `concurrency` at once; invocations past `reserved` refused.
    pub(crate) fn new(spec: FunctionSpec, launch: Launch, concurrency: usize, reserved: Option<usize>) -> Self {
        let concurrency = concurrency.max(1);
        Self {
            spec,
            launch,
            slots: Semaphore::new(concurrency),
            concurrency,
            reserved: reserved.map(ReservedConcurrency::new),
            idle: Mutex::new(Vec::new()),
            cold_starts: AtomicU64::new(0),
            invocations: AtomicU64::new(0),
        }
    }

    pub fn spec(&self) -> &FunctionSpec {
        &self.spec
    }

    /// The most environments it runs at once.
    pub fn concurrency(&self) -> usize {
        self.concurrency
    }

    /// Environments started so far.
    pub fn cold_starts(&self) -> u64 {
        self.cold_starts.load(Ordering::Relaxed)
    }

    /// Invocations refused for the function's reserved concurrency so far.
    pub fn throttles(&self) -> u64 {
        self.reserved.as_ref().map_or(0, ReservedConcurrency::throttles)
    }

    /// Invocations answered or failed so far.
    pub fn invocations(&self) -> u64 {
        self.invocations.load(Ordering::Relaxed)
    }

    /// The process ids of the idle environments (what a test checks is gone after a stop).
    pub fn idle_pids(&self) -> Vec<u32> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner).iter().filter_map(|e| e.pid).collect()
    }

    /// Invokes the function synchronously (`RequestResponse`) with `payload`:
    /// its response, or why there is none.
    pub async fn invoke(&self, payload: impl Into<Bytes>) -> Result<Bytes, FunctionError> {
        let stopping =
            || FunctionError::new(kinds::SERVICE, format!("the local Lambda service is stopping ({})", self.spec.name));
        let _reserved = self.reserved.as_ref().map(|r| r.enter(&self.spec.name)).transpose()?;
        let _slot = tokio::select! {
            slot = self.slots.acquire() => slot.map_err(|_| stopping())?,
            () = self.launch.stop.cancelled() => return Err(stopping()),
        };
        let warm = {
            let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
            idle.retain(Environment::reusable);
            idle.pop()
        };
        let (environment, cold) = match warm {
            Some(environment) => (environment, false),
            None => {
                let serial = self.cold_starts.fetch_add(1, Ordering::Relaxed);
                (Environment::start(&self.spec, &self.launch, serial).await?, true)
            }
        };
        let answer = environment.invoke(payload.into(), self.spec.timeout, cold).await;
        self.invocations.fetch_add(1, Ordering::Relaxed);
        if environment.reusable() && !self.launch.stop.is_cancelled() {
            self.idle.lock().unwrap_or_else(PoisonError::into_inner).push(environment);
        }
        answer
    }
}
