//! A step function's `main`: honour the function's log settings, build its
//! service (the shared core, the shop service or the sheet service), then
//! answer invocations until Lambda discards the environment.
//!
//! The service is built at cold start and rebuilt, which re-reads its
//! secrets from Secrets Manager, in two cases: when it is older than
//! `SLUICE_SECRET_TTL_SECS`, so a rotated secret (`put-secret-value`)
//! reaches every warm environment within that time without a redeploy; and
//! when an invocation fails with `Sluice.CredentialRejected` and the
//! service is older than [`REREAD_AFTER`], so a refused credential gets one
//! re-read, and the invocation one more try, before the failure is
//! reported. A rebuild that fails keeps the old service and logs why.

use lambda_runtime::{Diagnostic, LambdaEvent, service_fn};
use serde::Serialize;
use serde::de::DeserializeOwned;
use sluice_config::{EnvSource, Serving};
use sluice_domain::ErrorKind;
use sluice_pipeline::{CatchUpService, ServiceCore, SheetService, ShopService};
use sluice_redis::Connection;
use std::fmt::{Debug, Display};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Mutex;

/// A refused credential re-reads the secrets at most this often, so a
/// credential that stays refused does not turn every invocation into a
/// Secrets Manager call.
pub const REREAD_AFTER: Duration = Duration::from_secs(60);

/// Whether a handler's failure says our credentials were refused.
pub trait CredentialRefusal {
    fn credential_refused(&self) -> bool;
}

impl CredentialRefusal for crate::StepFailure {
    fn credential_refused(&self) -> bool {
        self.0.kind == ErrorKind::CredentialRejected
    }
}

/// The flush function reports failures per message; its own error is
/// never a refused credential.
impl CredentialRefusal for lambda_runtime::Error {
    fn credential_refused(&self) -> bool {
        false
    }
}

/// What a served function prints after each invocation: one EMF line of
/// what it counted (nothing when it counted nothing).
pub trait PrintsMetrics {
    fn print_emf(&self, stage: &str, function: &str);
}

/// The step services print what their core counted.
impl PrintsMetrics for ServiceCore<Connection> {
    fn print_emf(&self, stage: &str, function: &str) {
        self.metrics().print_emf(stage, function);
    }
}

impl PrintsMetrics for ShopService<Connection> {
    fn print_emf(&self, stage: &str, function: &str) {
        self.core().print_emf(stage, function);
    }
}

impl PrintsMetrics for CatchUpService<Connection> {
    fn print_emf(&self, stage: &str, function: &str) {
        self.shop().print_emf(stage, function);
    }
}

impl PrintsMetrics for SheetService<Connection> {
    fn print_emf(&self, stage: &str, function: &str) {
        self.core().print_emf(stage, function);
    }
}

/// The service and when it was built.
struct Built<S> {
    service: Arc<S>,
    at: Instant,
}

/// Serves the step function `function` (`"fetch"`: the name in its logs
/// and EMF lines). `start` builds the service; if the first build fails,
/// the cold start ends with a log line naming the problem. Each invocation
/// is answered by `handler`, then one EMF line prints what the service
/// counted ([`PrintsMetrics`]).
pub async fn serve_step<S, A, R, E, D>(
    function: &str,
    start: impl AsyncFn() -> Result<S, D>,
    handler: impl AsyncFn(&S, LambdaEvent<A>) -> Result<R, E>,
) -> ExitCode
where
    S: PrintsMetrics,
    A: DeserializeOwned + Clone,
    R: Serialize,
    E: Into<Diagnostic> + Debug + CredentialRefusal,
    D: Display,
{
    // Honours the function's log level and JSON log format settings.
    lambda_runtime::tracing::init_default_subscriber();
    let started = Serving::from_source(&EnvSource::from_process()).map_err(|e| e.to_string());
    let (serving, service) = match (started, start().await.map_err(|e| e.to_string())) {
        (Ok(serving), Ok(service)) => (serving, service),
        (Err(e), _) | (_, Err(e)) => {
            let message = format!("sluice-fn-{function} cannot start: {e}");
            lambda_runtime::tracing::error!("{message}");
            crate::report_init_error(&message).await;
            return ExitCode::FAILURE;
        }
    };
    let built = Mutex::new(Built { service: Arc::new(service), at: Instant::now() });
    let ages = Ages { ttl: serving.secret_ttl, reread_after: REREAD_AFTER };
    let served = lambda_runtime::run(service_fn(|event: LambdaEvent<A>| async {
        let (answer, service) = invoke(&built, function, &start, &handler, event, ages).await;
        service.print_emf(&serving.stage, function);
        answer
    }))
    .await;
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            lambda_runtime::tracing::error!("sluice-fn-{function}: the Lambda runtime stopped: {e}");
            ExitCode::FAILURE
        }
    }
}

/// When the service is rebuilt: past `ttl`, and past `reread_after` when
/// a credential was refused.
#[derive(Debug, Clone, Copy)]
struct Ages {
    ttl: Duration,
    reread_after: Duration,
}

/// One invocation: the service (rebuilt when past its TTL) answers it; a
/// refused credential rebuilds it (when old enough) and the invocation is
/// tried once more. Returns the answer and the service that gave it.
async fn invoke<S, A: Clone, R, E: CredentialRefusal, D: Display>(
    built: &Mutex<Built<S>>,
    function: &str,
    start: &impl AsyncFn() -> Result<S, D>,
    handler: &impl AsyncFn(&S, LambdaEvent<A>) -> Result<R, E>,
    event: LambdaEvent<A>,
    ages: Ages,
) -> (Result<R, E>, Arc<S>) {
    let service = current(built, function, start, |age| age >= ages.ttl).await;
    let answer = handler(&service, event.clone()).await;
    if !answer.as_ref().is_err_and(CredentialRefusal::credential_refused) {
        return (answer, service);
    }
    let fresh = current(built, function, start, |age| age >= ages.reread_after).await;
    if Arc::ptr_eq(&fresh, &service) {
        return (answer, service);
    }
    lambda_runtime::tracing::info!("sluice-fn-{function}: a credential was refused; secrets re-read, retrying once");
    (handler(&fresh, event).await, fresh)
}

/// The service, rebuilt first when `stale` says its age calls for it.
async fn current<S, D: Display>(
    built: &Mutex<Built<S>>,
    function: &str,
    start: &impl AsyncFn() -> Result<S, D>,
    stale: impl Fn(Duration) -> bool,
) -> Arc<S> {
    let mut built = built.lock().await;
    if stale(built.at.elapsed()) {
        match start().await {
            Ok(service) => *built = Built { service: Arc::new(service), at: Instant::now() },
            // Keep serving with what works; the next invocation tries again.
            Err(e) => lambda_runtime::tracing::warn!("sluice-fn-{function}: rebuilding the service failed: {e}"),
        }
    }
    built.service.clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StepFailure;
    use sluice_domain::StepError;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// A service that is the number of its build; the handler refuses
    /// credentials on build 1 and answers with the build number otherwise.
    struct Fixture {
        builds: AtomicU32,
        calls: AtomicU32,
    }

    impl Fixture {
        async fn start(&self) -> Result<u32, String> {
            Ok(self.builds.fetch_add(1, Ordering::SeqCst) + 1)
        }

        async fn handle(&self, service: &u32, _event: LambdaEvent<u32>) -> Result<u32, StepFailure> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            match service {
                1 => Err(StepFailure(StepError::new(ErrorKind::CredentialRejected, "invalid_client"))),
                n => Ok(*n),
            }
        }
    }

    async fn run(ages: Ages) -> (Result<u32, StepFailure>, u32, u32) {
        let fixture = Fixture { builds: AtomicU32::new(0), calls: AtomicU32::new(0) };
        let start = async || fixture.start().await;
        let handler = async |s: &u32, e| fixture.handle(s, e).await;
        let built = Mutex::new(Built { service: Arc::new(start().await.unwrap()), at: Instant::now() });
        let event = LambdaEvent::new(0, lambda_runtime::Context::default());
        let (answer, _) = invoke(&built, "test", &start, &handler, event, ages).await;
        (answer, fixture.builds.load(Ordering::SeqCst), fixture.calls.load(Ordering::SeqCst))
    }

    #[tokio::test]
    async fn a_refused_credential_rereads_the_secrets_and_tries_once_more() {
        let (answer, builds, calls) = run(Ages { ttl: Duration::MAX, reread_after: Duration::ZERO }).await;
        assert_eq!((answer.unwrap(), builds, calls), (2, 2, 2));
    }

    #[tokio::test]
    async fn a_refusal_soon_after_a_read_is_reported_without_another_read() {
        let (answer, builds, calls) = run(Ages { ttl: Duration::MAX, reread_after: Duration::MAX }).await;
        assert!(answer.unwrap_err().credential_refused());
        assert_eq!((builds, calls), (1, 1));
    }

    #[tokio::test]
    async fn a_service_past_its_ttl_is_rebuilt_before_it_answers() {
        let (answer, builds, calls) = run(Ages { ttl: Duration::ZERO, reread_after: Duration::MAX }).await;
        assert_eq!((answer.unwrap(), builds, calls), (2, 2, 1));
    }
}
