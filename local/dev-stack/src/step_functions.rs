//! The pipeline's steps as the local interpreter's task handlers, under the
//! names `statemachine/pipeline.asl.json` calls them by. In AWS the same
//! `${…Function}` placeholders become Lambda ARNs (DefinitionSubstitutions);
//! here they become these local names.

use redis::aio::ConnectionLike;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use sluice_asl::{Substitutions, TaskError, TaskHandler, TaskRegistry};
use sluice_domain::StepError;
use sluice_lambda_runtime::ReservedConcurrency;
use sluice_pipeline::{SheetService, ShopService};
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

/// The definition every local run executes: the deployed one.
pub const PIPELINE_DEFINITION: &str = include_str!("../../../statemachine/pipeline.asl.json");

/// The state machine's name locally: `sluice-${Stage}-pipeline` in
/// `infra/template.yaml`, with stage `dev`.
pub const PIPELINE_NAME: &str = "sluice-dev-pipeline";

/// (placeholder, local function name) for each step.
pub const FUNCTIONS: [(&str, &str); 6] = [
    ("PlanBatchFunction", "PlanBatch"),
    ("EnsureTokenFunction", "EnsureToken"),
    ("FetchFunction", "Fetch"),
    ("StoreFunction", "Store"),
    ("RecordFailureFunction", "RecordFailure"),
    ("BufferRowFunction", "BufferRow"),
];

/// The definition's placeholders filled with the local function names, and
/// the events queue's `max_receive_count` (the template's `MaxReceiveCount`).
pub fn substitutions(max_receive_count: u32) -> Substitutions {
    let functions =
        FUNCTIONS.iter().fold(Substitutions::new(), |subs, (placeholder, name)| subs.with(*placeholder, *name));
    functions.with("MaxReceiveCount", max_receive_count.to_string())
}

/// `$service.$method` as a task handler; each call runs on its own clone
/// of the service (a clone shares the connection and the counts).
macro_rules! task {
    ($service:expr, $method:ident) => {{
        let service = $service.clone();
        step(move |input| {
            let service = service.clone();
            async move { service.$method(input).await }
        })
    }};
}

/// Every step, registered under its local function name: the plan and
/// the failure step on the shared core, the others on their path's service.
/// With `reserved`, each step refuses invocations past that many at once,
/// as Lambda refuses past a function's reserved concurrency (the
/// template's `StepConcurrency`); the returned limits count the refusals.
pub fn registry<C>(shop: ShopService<C>, sheet: SheetService<C>, reserved: Option<usize>) -> (TaskRegistry, StepLimits)
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    let core = shop.core().clone();
    let steps: [(&str, Arc<dyn TaskHandler>); 6] = [
        ("PlanBatch", Arc::new(task!(core, plan_batch))),
        ("EnsureToken", Arc::new(task!(shop, ensure_token))),
        ("Fetch", Arc::new(task!(shop, fetch))),
        ("Store", Arc::new(task!(shop, store))),
        ("RecordFailure", Arc::new(task!(core, record_failure))),
        ("BufferRow", Arc::new(task!(sheet, buffer_row))),
    ];
    let mut limits = StepLimits::default();
    let registry = steps.into_iter().fold(TaskRegistry::new(), |registry, (name, handler)| match reserved {
        None => registry.with(name, move |input| handler.call(input)),
        Some(limit) => {
            let reservation = Arc::new(ReservedConcurrency::new(limit));
            limits.0.insert(name, reservation.clone());
            registry.with(name, held_to(name, reservation, handler))
        }
    });
    (registry, limits)
}

/// Each in-process step's reservation, by local function name (empty when
/// the steps are not held to one).
#[derive(Debug, Clone, Default)]
pub struct StepLimits(BTreeMap<&'static str, Arc<ReservedConcurrency>>);

impl StepLimits {
    /// Invocations refused so far, over every step.
    pub fn throttles(&self) -> u64 {
        self.0.values().map(|r| r.throttles()).sum()
    }

    /// Invocations `step` let in (0 for a step not held to a reservation).
    pub fn invocations(&self, step: &str) -> u64 {
        self.0.get(step).map_or(0, |r| r.invocations())
    }
}

/// `handler` behind `reservation`: an invocation that finds every place
/// taken fails at once with Lambda's `TooManyRequestsException`.
fn held_to(
    name: &'static str,
    reservation: Arc<ReservedConcurrency>,
    handler: Arc<dyn TaskHandler>,
) -> impl TaskHandler {
    move |input: Value| {
        let entered = reservation.enter(name);
        let handler = handler.clone();
        async move {
            let _place = entered.map_err(|e| TaskError::new(e.error_type, e.error_message))?;
            handler.call(input).await
        }
    }
}

/// A typed step as a JSON task handler, wrapped exactly as the Lambda
/// functions wrap it ([`sluice_pipeline::call_json`]): input that does not
/// parse is `Sluice.InvalidRequest`; a step error keeps its kind as the
/// error name.
fn step<I, O, F, Fut>(f: F) -> impl TaskHandler
where
    I: DeserializeOwned + Send + 'static,
    O: Serialize + Send + 'static,
    F: Fn(I) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<O, StepError>> + Send + 'static,
{
    move |input: Value| {
        let f = f.clone();
        async move { sluice_pipeline::call_json(input, f).await.map_err(TaskError::from) }
    }
}
